/** `npm run bench`: every benchmark, or the ones named (`npm run bench -- compressor`). */
import { runBudgetsBench } from './budgets.js';
import { runCompressorBench } from './compressor.js';
import { runConcurrencyBench } from './concurrency.js';
import { runDeadWorkerBench } from './dead-worker.js';
import { runFailoverBench } from './failover.js';
import { runPipelineBench } from './pipeline.js';
import { runSessionsBench } from './sessions.js';
import { runIdleCompactionBench } from './sessions-idle.js';
import { runSoakBench } from './soak.js';
import { runStorageBench } from './storage.js';
import { runStartupBench } from './startup.js';

const wanted = new Set(process.argv.slice(2));
const all = wanted.size === 0;
if (all || wanted.has('compressor')) await runCompressorBench();
if (all || wanted.has('sessions')) await runSessionsBench();
if (all || wanted.has('sessions') || wanted.has('idle')) await runIdleCompactionBench();
if (all || wanted.has('pipeline')) await runPipelineBench();
if (all || wanted.has('storage')) await runStorageBench();
// Needs Redis and starts processes: only when named.
if (wanted.has('failover')) await runFailoverBench();
if (wanted.has('dead-worker')) await runDeadWorkerBench();
if (wanted.has('startup')) await runStartupBench();
// Two stacks, budgets off against on, about 2 minutes: only when named.
if (wanted.has('budgets')) await runBudgetsBench();
// Slow model, minutes of waiting: only when named.
if (wanted.has('concurrency')) await runConcurrencyBench();
// Half an hour by default (SOAK_MINUTES): only when named.
if (wanted.has('soak')) await runSoakBench();
