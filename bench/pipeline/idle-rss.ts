/**
 * bench/pipeline/idle-rss: the idle RSS of `chatgate gateway` and `chatgate worker` alone, as
 * bench/pipeline measures it (4 s after the ready banner), without the load phases — a quick
 * figure for start-up memory work. `npx tsx bench/pipeline/idle-rss.ts [runs]` (default 3);
 * PIPELINE_NODE_ARGS go to each role's node as in the full bench, PIPELINE_RUNTIME=tsx runs the
 * roles through tsx instead of compiled. Also prints the time from spawn to the ready banner.
 */
import { startBenchLlm } from './fake-llm.js';
import { rssMiB, runtime, startRole } from './procs.js';
import { freePort, startBenchRedis } from './redis.js';

const runs = Number(process.argv[2] ?? 3);
const redis = await startBenchRedis(process.env.REDIS_URL);
const llm = await startBenchLlm();
const tag = `bench-rss-${process.pid}`;
console.log(`idle-rss: ${runtime()}`);
try {
  for (let run = 0; run < runs; run++) {
    const env = {
      REDIS_URL: redis.url, CHATGATE_KEY_PREFIX: `${tag}:`, CHATGATE_QUEUE_PREFIX: `{${tag}q}`,
      OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'bench', CHATGATE_MODEL: process.env.CHATGATE_MODEL ?? 'gpt-4o-mini',
      CHATGATE_LOG_LEVEL: 'info', CHATGATE_HTTP_PORT: String(await freePort()),
    };
    const gateway = await startRole('gateway', env);
    const worker = await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' });
    await new Promise((resolve) => setTimeout(resolve, 4000));
    console.log(`run ${run + 1}: idle RSS MiB gateway ${rssMiB(gateway.pid).toFixed(0)}, worker ${rssMiB(worker.pid).toFixed(0)}; ready after ms gateway ${gateway.readyMs.toFixed(0)}, worker ${worker.readyMs.toFixed(0)}`);
    await worker.stop();
    await gateway.stop();
  }
} finally {
  await llm.close();
  await redis.close();
}
