import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The folders of src/ (and the top-level modules), as an import names them from any depth:
// `../redis/keys.js`, `../../src/redis/keys.js`, `../log.js`.
const SRC = ['core', 'errors', 'log', 'metrics', 'periodic', 'config', 'config-options', 'config-budgets', 'budget', 'redis', 'queue', 'outbound', 'turn-stop', 'live-reply', 'llm', 'session', 'approvals', 'gateway', 'monitor', 'cli'];

/** A regex matching a relative import of src module or folder `name`. */
const src = (name) => `^(\\.\\./)+(src/)?${name}(/|\\.js$)`;

const NO_EVAL = [{ selector: "CallExpression[callee.name='eval']", message: 'no eval' }];
// A module-level `let`, or a module-level collection, in src/core (declared or exported). Constants are
// frozen objects or arrays; a cache or registry is a field of an instance that its owner creates and passes.
const MODULE_STATE = ['Program', 'Program > ExportNamedDeclaration'].flatMap((scope) => [
  { selector: `${scope} > VariableDeclaration[kind='let']`, message: 'src/core holds no module-level state: no module-level `let` (make it a field of an instance the caller creates)' },
  {
    selector: `${scope} > VariableDeclaration > VariableDeclarator > NewExpression[callee.name=/^(Map|Set|WeakMap|WeakSet)$/]`,
    message: 'src/core holds no module-level state: no module-level Map/Set/WeakMap/WeakSet (a cache or registry belongs to an instance the caller creates; a constant lookup is a frozen array or object)',
  },
]);


/**
 * One boundary: `files` may import only the src modules in `allowed` (plus their own folder and
 * packages); channels/ and workers/ only when listed. Mirrors the folder's README.
 */
function boundary(files, allowed, { channels = false, workers = false, extra = [] } = {}) {
  const forbidden = SRC.filter((name) => !allowed.includes(name) && !['config', 'config-options', 'config-budgets'].includes(name));
  const patterns = [
    { regex: src('config(-options|-budgets)?'), message: 'only src/cli reads the configuration: map it to this component\'s options in src/cli/compose.ts' },
    ...forbidden.map((name) => ({ regex: src(name), message: `${files[0]} may not import src/${name} (see the folder's README)` })),
    // AsyncLocalStorage turns on Node 20's promise hooks for every promise of the process (about 30% more CPU a message): pass context explicitly.
    { group: ['node:async_hooks', 'async_hooks'], message: 'no async_hooks: pass what a call needs with the call (see CallScope in src/core/budget.ts)' },
    ...extra,
  ];
  if (!channels) patterns.push({ regex: '^(\\.\\./)+channels/', message: `only src/gateway, src/outbound, src/live-reply and the composition root import channels/ (channels/README.md)` });
  if (!workers) patterns.push({ regex: '^(\\.\\./)+workers/', message: `only the composition root (src/cli) imports workers/ (workers/README.md)` });
  return { files, rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

/**
 * The pure core's imports (STYLE.md): no I/O or SDK package, and relative imports only into src/core.
 * `up` is the way from the files' folder to src/ (`../` from src/core, `../../` from its subfolders).
 */
function coreImports(up) {
  return ['error', {
    patterns: [
      { group: ['node:*', 'fs', 'net', 'http', 'ioredis', 'bullmq', 'openai', 'grammy', 'discord.js', 'pino'], message: 'src/core is pure: no I/O or SDK imports' },
      { group: [`${up}*`, `!${up}core/*`], message: 'src/core imports only src/core' },
    ],
  }];
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', 'test-output/**', '.state/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', ...NO_EVAL],
    },
  },
  {
    // The web chat page's client modules run in the browser (channels/web/page/).
    files: ['channels/web/page/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(['window', 'document', 'navigator', 'location', 'history', 'localStorage', 'crypto', 'fetch', 'EventSource', 'FormData',
        'URLSearchParams', 'setTimeout', 'clearTimeout', 'requestAnimationFrame', 'cancelAnimationFrame'].map((name) => [name, 'readonly'])),
    },
  },
  // Boundaries, one block per folder, as each README says (src/cli, src/cli.ts, src/index.ts, test/, bench/ are free).
  boundary(['src/errors.ts', 'src/log.ts', 'src/metrics.ts'], ['core']),
  boundary(['src/periodic.ts'], []),
  boundary(['channels/*.ts', 'channels/telegram/**/*.ts'], ['core', 'errors', 'log'], { channels: true }),
  boundary(['channels/discord/**/*.ts'], ['core', 'errors', 'log', 'redis'], {
    channels: true,
    extra: [{ regex: '^(\\.\\./)+(src/)?redis/(?!client\\.js|keys\\.js)', message: 'the Discord channel uses only src/redis/client and keys, for its catch-up cursors (channels/README.md)' }],
  }),
  boundary(['channels/web/**/*.ts'], ['core', 'errors', 'log', 'redis', 'monitor'], {
    channels: true,
    extra: [
      { regex: '^(\\.\\./)+(src/)?redis/(?!client\\.js|keys\\.js|scripts\\.js)', message: 'the web chat uses only src/redis/client, keys and scripts (channels/README.md)' },
      { regex: '^(\\.\\./)+(src/)?monitor/(?!request-origin\\.js)', message: 'the web chat uses only src/monitor/request-origin (channels/README.md)' },
    ],
  }),
  boundary(['channels/openai-api/**/*.ts'], ['core', 'errors', 'log', 'redis'], {
    channels: true,
    extra: [{ regex: '^(\\.\\./)+(src/)?redis/(?!client\\.js|keys\\.js|pubsub\\.js|scripts\\.js)', message: 'the API channel uses only src/redis/client, keys, pubsub and scripts, for its answer relay and session claims (channels/README.md)' }],
  }),
  // Of src/session, src/redis implements the read model's port (now in src/core): no import of src/session.
  boundary(['src/redis/**/*.ts'], ['core', 'errors', 'log']),
  // The shard layout counts the reply streams' replies before a shard count changes.
  boundary(['src/queue/**/*.ts'], ['core', 'errors', 'log', 'redis', 'outbound']),
  // `/stop`: the stop requests in Redis and the gateway's command (src/turn-stop/README.md).
  boundary(['src/turn-stop/**/*.ts'], ['core', 'errors', 'log', 'redis']),
  // Spend limits: the counters in Redis and the guard around model calls (src/budget/README.md).
  boundary(['src/budget/**/*.ts'], ['core', 'errors', 'log', 'metrics', 'redis', 'llm']),
  // The reply transport (src/outbound/README.md): its streams, order, delivery and ledger.
  boundary(['src/outbound/**/*.ts'], ['core', 'errors', 'log', 'metrics', 'redis', 'queue'], { channels: true }),
  // Live replies (src/live-reply/README.md): the shared view record, its pub/sub and the gateway's view.
  boundary(['src/live-reply/**/*.ts'], ['core', 'errors', 'log', 'redis'], { channels: true }),
  boundary(['src/llm/**/*.ts'], ['core', 'errors', 'log', 'redis']),
  boundary(['src/approvals/**/*.ts'], ['core', 'errors', 'log', 'periodic', 'redis', 'queue']),
  boundary(['src/monitor/**/*.ts'], ['core', 'errors', 'log', 'metrics']),
  boundary(['src/session/**/*.ts'], ['core', 'errors', 'log', 'metrics', 'redis', 'llm']),
  boundary(['src/gateway/**/*.ts'], ['core', 'errors', 'log', 'metrics', 'periodic', 'redis', 'queue', 'outbound', 'turn-stop', 'live-reply', 'budget', 'session', 'approvals', 'monitor'], { channels: true }),
  boundary(['workers/*.ts'], ['core', 'errors', 'log', 'metrics', 'periodic', 'redis', 'queue', 'outbound', 'turn-stop', 'live-reply', 'budget', 'session', 'approvals', 'llm'], { workers: true }),
  boundary(['workers/tools/**/*.ts'], ['core', 'errors', 'log', 'metrics', 'redis', 'llm'], { workers: true }),
  {
    // The pure core: no I/O, no env, no SDKs (STYLE.md). Last, so it wins over any block above.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': coreImports('../'),
      'no-restricted-globals': ['error', 'process', 'setTimeout', 'setInterval', 'fetch'],
      // No module-level mutable state: caches and registries belong to an instance its owner creates.
      'no-restricted-syntax': ['error', ...NO_EVAL, ...MODULE_STATE],
    },
  },
  {
    // The compaction engine (src/core/compaction/): pure like the rest of core; it imports core and itself only.
    files: ['src/core/compaction/**/*.ts'],
    rules: {
      'no-restricted-imports': coreImports('../../'),
    },
  },
);
