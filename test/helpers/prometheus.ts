/** Parses the Prometheus text format into `name{labels}` → value; a line it cannot read fails the test. */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = line.match(/^([a-zA-Z_:][\w:]*)(\{.*\})?\s+(\S+)(\s+\d+)?$/);
    if (!match) throw new Error(`unparseable exposition line: ${line}`);
    samples.set(`${match[1]}${match[2] ?? ''}`, Number(match[3]));
  }
  return samples;
}
