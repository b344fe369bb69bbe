import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', 'test-output/**', '.state/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: "CallExpression[callee.name='eval']", message: 'no eval' }],
    },
  },
  {
    // The pure core: no I/O, no env, no SDKs (STYLE.md).
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*', 'fs', 'net', 'http', 'ioredis', 'bullmq', 'openai', 'grammy', 'discord.js', 'pino'], message: 'src/core is pure: no I/O or SDK imports' },
          { group: ['../*', '!../core/*'], message: 'src/core imports only src/core' },
        ],
      }],
      'no-restricted-globals': ['error', 'process', 'setTimeout', 'setInterval', 'fetch'],
    },
  },
);
