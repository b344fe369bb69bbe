/** How an amount of money reads, on every surface. Pure. */

/**
 * Money for people, the one rule of every surface (CLI, API pages, chat commands, dashboard):
 * 2 decimals from $1 (`$1.23`), below that 3 significant digits with trailing zeros dropped down
 * to 2 decimals (`$0.50`, `$0.123`, `$0.024`, `$0.0108`), so two different small amounts never
 * read the same. `price unknown` when nothing was priced but something ran; `$1.23 + price
 * unknown` when part was. Never `$0.00` for calls whose price is unknown. Self-contained: the
 * pages inline it with `toString()`.
 */
export function formatMoney(usdValue: number, unknown = 0): string {
  if (unknown > 0 && usdValue === 0) return 'price unknown';
  const abs = Math.abs(usdValue);
  const text = abs >= 1 || abs === 0 ? usdValue.toFixed(2)
    : usdValue.toFixed(Math.min(20, 2 - Math.floor(Math.log10(abs)))).replace(/(\.\d\d\d*?)0+$/, '$1');
  return unknown > 0 ? `$${text} + price unknown` : `$${text}`;
}
