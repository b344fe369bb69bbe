/**
 * The one way a component runs a job on a timer (the pending sweeper, the worker watch, the
 * approval expiry, the dead-worker recovery): one run at a time, a timer that never keeps the
 * process alive, and a stop that lets the run under way finish.
 */

/** A job that runs every `intervalMs`, one run at a time. */
export interface Periodic<T> {
  /** Runs the job now, or joins the run under way. @returns its result. */
  run(): Promise<T>;
  /** Stops the timer; a run under way finishes (the job sees its signal aborted). */
  stop(): void;
}

/** Options of {@link startPeriodic}. */
export interface PeriodicOptions<T> {
  /** Interval between two timed runs, ms; 0: no timer (the caller calls `run`). */
  intervalMs: number;
  /** Runs once right away as well. Default false. */
  atStart?: boolean;
  /** Told of each timed run that succeeded. */
  onDone?: (result: T) => void;
  /** Told of each timed run that failed before `stop` (a run cut short by the shutdown is no failure). */
  onError: (err: unknown) => void;
}

/** Starts running `job` every `options.intervalMs`; `job` gets a signal aborted by `stop`. */
export function startPeriodic<T>(job: (signal: AbortSignal) => Promise<T>, options: PeriodicOptions<T>): Periodic<T> {
  const stopping = new AbortController();
  let running: Promise<T> | undefined;
  const run = (): Promise<T> => {
    running ??= job(stopping.signal).finally(() => { running = undefined; });
    return running;
  };
  const tick = () => void run().then(options.onDone, (err: unknown) => { if (!stopping.signal.aborted) options.onError(err); });
  const timer = options.intervalMs > 0 ? setInterval(tick, options.intervalMs) : undefined;
  timer?.unref();
  if (options.atStart) tick();
  return {
    run,
    stop: () => {
      stopping.abort();
      clearInterval(timer);
    },
  };
}
