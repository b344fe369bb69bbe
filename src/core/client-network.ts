/**
 * The network a client's address stands for, as the per-address limits count it (the web chat's
 * rate limit and open reads). Pure.
 */

/**
 * An IPv4 address as it is (also when IPv4-mapped, `::ffff:192.0.2.7`); an IPv6 address as its /64,
 * `2001:db8:1:2::/64`: one subscriber gets a whole /64, so its other addresses cost it nothing.
 */
export function toClientNetwork(address: string): string {
  const bare = address.trim().toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(bare);
  if (mapped) return mapped[1]!;
  if (!bare.includes(':')) return bare;
  const [head = '', tail] = bare.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  // An IPv4 tail (`::1.2.3.4`) is two groups.
  const rightGroups = right.length + (right.at(-1)?.includes('.') ? 1 : 0);
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - rightGroups)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
