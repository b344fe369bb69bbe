/** How an amount of money reads, on every surface. Pure. */

/**
 * Money for people, the one rule of every surface (CLI, API pages, chat commands, dashboard):
 * 2 decimals from $1 (`$1.23`), below that 3 significant digits with trailing zeros dropped down
 * to 2 decimals (`$0.50`, `$0.123`, `$0.024`, `$0.0108`), so two different small amounts never
 * read the same; in whole micro-USD (the ledger's unit), never in exponent notation. `price
 * unknown` when nothing was priced but something ran; `$1.23 + price unknown` when part was.
 * Never `$0.00` for calls whose price is unknown. Self-contained: the pages inline it with
 * `toString()`.
 */
export function formatMoney(usdValue: number, unknown = 0): string {
  if (unknown > 0 && usdValue === 0) return 'price unknown';
  // Whole micro-USD, the ledger's unit: float dust (1.1e-16) reads $0.00, never in exponent notation.
  const value = Math.round(usdValue * 1_000_000) / 1_000_000;
  const abs = Math.abs(value);
  // toFixed writes 1e21 and more in exponent notation; Intl never does.
  const text = abs >= 1e21 ? value.toLocaleString('en-US', { useGrouping: false, minimumFractionDigits: 2, maximumFractionDigits: 2 })
    : abs >= 1 || abs === 0 ? value.toFixed(2)
      : value.toFixed(2 - Math.floor(Math.log10(abs))).replace(/(\.\d\d\d*?)0+$/, '$1');
  return unknown > 0 ? `$${text} + price unknown` : `$${text}`;
}
