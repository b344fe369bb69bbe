/**
 * bench/pipeline/heap: the V8 heap of a running role right after a full garbage collection, read
 * through its inspector (the role starts with `--inspect=127.0.0.1:0`; see `startRole`). Nothing in
 * chatgate itself serves this: the bench asks the process as a debugger would.
 */
import WebSocket from 'ws';

/** What one reading found, MiB. */
export interface HeapReading {
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
}

/** A connection to one role's inspector. */
export interface HeapProbe {
  /** Collects garbage, then reads `process.memoryUsage()` inside the role. */
  read(): Promise<HeapReading>;
  close(): void;
}

/** Connects to the inspector at `url` (`ws://127.0.0.1:<port>/<id>`). */
export async function openHeapProbe(url: string): Promise<HeapProbe> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let next = 1;
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = message.id === undefined ? undefined : waiting.get(message.id);
    if (!waiter) return;
    waiting.delete(message.id!);
    if (message.error) waiter.reject(new Error(`inspector: ${message.error.message}`));
    else waiter.resolve(message.result);
  });
  socket.on('close', () => {
    for (const waiter of waiting.values()) waiter.reject(new Error('inspector connection closed'));
    waiting.clear();
  });
  const send = (method: string, params: Record<string, unknown> = {}): Promise<unknown> => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    socket.send(JSON.stringify({ id, method, params }));
  });
  const mib = (bytes: number) => bytes / 1024 / 1024;
  return {
    async read() {
      await send('HeapProfiler.collectGarbage');
      const result = await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true }) as { result: { value: string } };
      const usage = JSON.parse(result.result.value) as NodeJS.MemoryUsage;
      return { heapUsedMiB: mib(usage.heapUsed), heapTotalMiB: mib(usage.heapTotal), externalMiB: mib(usage.external) };
    },
    close() {
      socket.close();
    },
  };
}
