/**
 * Fixed instants for tests that inject a clock into code writing Redis keys with an absolute
 * expiry (budget counters and markers, usage rollups). Redis deletes keys on its own, real clock:
 * a literal date would make such keys vanish at once once that date is past. So tests take their
 * instant from here, ahead of the real date, and compute the ids they expect from it.
 *
 * TEST_CLOCK_BASE (an ISO date) stands in for "today", to check no literal date is left: run a
 * test with it set years ahead and it still passes.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The real time, or TEST_CLOCK_BASE when set. */
export function clockBase(): number {
  const base = process.env.TEST_CLOCK_BASE;
  if (base === undefined || base === '') return Date.now();
  const ms = Date.parse(base);
  if (Number.isNaN(ms)) throw new Error(`TEST_CLOCK_BASE must be an ISO date, not ${JSON.stringify(base)}`);
  return ms;
}

/** `day` of the month after the base's (UTC), at `hours`:`minutes`: between 1 and 2 months ahead. */
export function nextMonthAt(day: number, hours: number, minutes = 0): number {
  const base = new Date(clockBase());
  return Date.UTC(base.getUTCFullYear(), base.getUTCMonth() + 1, day, hours, minutes);
}

/** The start of the day (UTC) after the base's. */
export function tomorrowStart(): number {
  return (Math.floor(clockBase() / DAY_MS) + 1) * DAY_MS;
}

/** The month of `ms` (UTC), e.g. "2026-12". */
export const monthIdOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7);

/** The day of `ms` (UTC), e.g. "2026-12-02". */
export const dayIdOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The hour of `ms` (UTC), e.g. "2026-12-02T10". */
export const hourLabelOf = (ms: number): string => new Date(ms).toISOString().slice(0, 13);
