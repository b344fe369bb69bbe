/**
 * The keys that appear more than once in one JSON object of `text` (at any depth): `JSON.parse`
 * keeps the last and hides the others, so a log line with
 * `"component":"worker",…,"component":"llm"` parses without complaint.
 * @throws SyntaxError when `text` is not JSON.
 */
export function duplicateJsonKeys(text: string): string[] {
  JSON.parse(text); // valid JSON first: the scan below trusts the structure
  const duplicates: string[] = [];
  const stack: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      const end = stringEnd(text, i);
      const top = stack.at(-1);
      if (top && expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.has(key)) duplicates.push(key);
        top.add(key);
        expectKey = false;
      }
      i = end;
    } else if (ch === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === '[') {
      stack.push(null);
    } else if (ch === '}' || ch === ']') {
      stack.pop();
    } else if (ch === ',') {
      expectKey = Boolean(stack.at(-1));
    }
  }
  return duplicates;
}

function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  throw new SyntaxError('unterminated string');
}
