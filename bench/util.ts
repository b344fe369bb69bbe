/** Small helpers shared by the benchmarks: a seeded PRNG, percentiles, table printing. */

/** A deterministic pseudo-random generator in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The p-th percentile (0–100) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

/** The median of a list of numbers (the mean of the middle two when their count is even). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The typical ratio of paired measurements (B/A per pair) with a ~95% interval: the
 * Hodges–Lehmann estimate on log ratios (the median of all pairwise means), its interval from the
 * exact Wilcoxon signed-rank distribution. Distribution-free; one outlying pair moves it little.
 * `coverage` is the interval's exact confidence (below 95% with fewer than 6 pairs).
 */
export function ratioInterval(ratios: number[]): { estimate: number; low: number; high: number; coverage: number } {
  const logs = ratios.map(Math.log);
  const n = logs.length;
  const walsh: number[] = [];
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) walsh.push((logs[i] + logs[j]) / 2);
  walsh.sort((a, b) => a - b);
  // mass[t] = P(signed-rank statistic = t) when the median ratio is 1.
  let mass = [1];
  for (let i = 1; i <= n; i++) mass = Array.from({ length: mass.length + i }, (_, t) => ((mass[t] ?? 0) + (mass[t - i] ?? 0)) / 2);
  let k = 0; // the interval drops the k lowest and k highest pairwise means
  let tail = mass[0];
  while (k + 1 < walsh.length / 2 && tail + mass[k + 1] <= 0.025) tail += mass[++k];
  return { estimate: Math.exp(median(walsh)), low: Math.exp(walsh[k]), high: Math.exp(walsh[walsh.length - 1 - k]), coverage: 1 - 2 * tail };
}

/** Prints rows as an aligned text table. */
export function printTable(headers: string[], rows: Array<Array<string | number>>): void {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  for (const [k, row] of cells.entries()) {
    console.log(row.map((c, i) => c.padEnd(widths[i])).join('  '));
    if (k === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

const WORDS = 'the customer asked whether the parcel could be delivered before friday because the office closes early and nobody will sign for it otherwise'.split(' ');

/** Prose of `words` words drawn from a fixed vocabulary. */
export function prose(words: number, random: () => number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[Math.floor(random() * WORDS.length)]);
  return out.join(' ');
}
