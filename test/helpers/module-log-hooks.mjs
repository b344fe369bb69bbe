/** The resolve hook of module-log.mjs: records each resolved URL and changes nothing. */
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
