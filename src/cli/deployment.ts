import { setOptionNames, type Config } from '../config.js';
import type { HeartbeatStatus, LlmBeat } from '../redis/heartbeats.js';

/** The options that choose the LLM: when none is set, operator commands use the running deployment's LLM instead of the defaults. */
const LLM_OPTIONS = ['CHATGATE_DEMO', 'OPENAI_BASE_URL', 'CHATGATE_MODEL', 'CHATGATE_SUMMARY_MODEL', 'CHATGATE_CONTEXT_WINDOW'] as const;

/** The LLM the running deployment uses, and the worker whose heartbeat says so. */
export interface DeploymentLlm {
  llm: LlmBeat;
  worker: Pick<HeartbeatStatus, 'id' | 'host' | 'pid'>;
}

/** A configuration, and where its LLM settings came from. */
export interface CommandConfig {
  config: Config;
  /** The running deployment whose LLM settings replaced the defaults; null when the environment chose them or nothing runs. */
  deployment: DeploymentLlm | null;
}

/** The LLM of the live worker that beat last among `beats`; null when no worker is alive. */
export function deploymentLlm(beats: readonly HeartbeatStatus[]): DeploymentLlm | null {
  const worker = beats.find((beat) => beat.role === 'worker' && beat.alive && beat.worker?.llm);
  return worker ? { llm: worker.worker!.llm, worker: { id: worker.id, host: worker.host, pid: worker.pid } } : null;
}

/**
 * `config` with the running deployment's LLM (model, summary model, window, base URL, demo mode)
 * when neither `env` nor its configuration file sets any option that chooses the LLM (a second
 * terminal next to `npm start` sets none): a command then works on what runs, not on defaults
 * that name an endpoint nobody uses. The API key stays the environment's (heartbeats hold no secret).
 */
export function withDeploymentLlm(config: Config, env: Readonly<Record<string, string | undefined>>, beats: readonly HeartbeatStatus[]): CommandConfig {
  const deployment = deploymentLlm(beats);
  const set = setOptionNames(env);
  if (!deployment || LLM_OPTIONS.some((name) => set.has(name))) return { config, deployment: null };
  const { llm } = deployment;
  return {
    config: {
      ...config,
      demo: llm.demo,
      llm: { ...config.llm, model: llm.model, summaryModel: llm.summaryModel, contextWindow: llm.contextWindow, contextWindowSource: 'config', baseUrl: llm.baseUrl ?? config.llm.baseUrl },
    },
    deployment,
  };
}

/** Whose LLM settings a command uses, for its lines: `worker host pid N (demo mode)`. */
export function describeDeployment(deployment: DeploymentLlm): string {
  return `worker ${deployment.worker.host} pid ${deployment.worker.pid}${deployment.llm.demo ? ' (demo mode)' : ''}`;
}
