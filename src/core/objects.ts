/** A copy of `value` without its `undefined` fields, so spreading it over defaults keeps the defaults. */
export function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
