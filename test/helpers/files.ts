/**
 * Small real files for attachment tests: a valid PDF written by hand (one text line per page,
 * Helvetica, a correct xref table), a PNG and a JPEG header, an OGG header. And a folder with a
 * tool that writes into it, for approval tests.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineTool } from '../../workers/tools/types.js';

/** A PDF with one page per entry of `pages`, each showing its text. */
export function makePdf(pages: readonly string[]): Buffer {
  const objects: string[] = [];
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  pages.forEach((text, i) => {
    const stream = `BT /F1 12 Tf 72 720 Td (${text.replace(/[\\()]/g, (c) => `\\${c}`)}) Tj ET`;
    objects[4 + i * 2] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
  });
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = out.length;
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = out.length;
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n${offsets.slice(1).map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** Bytes that start like a PNG (enough for type sniffing), `size` long. */
export function pngBytes(size = 64): Buffer {
  const bytes = Buffer.alloc(size, 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  return bytes;
}

/** Bytes that start like a JPEG, `size` long. */
export function jpegBytes(size = 64): Buffer {
  const bytes = Buffer.alloc(size, 3);
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]).copy(bytes);
  return bytes;
}

/** Bytes that start like an OGG stream (a voice note). */
export function oggBytes(size = 128): Buffer {
  const bytes = Buffer.alloc(size, 1);
  Buffer.from('OggS').copy(bytes);
  return bytes;
}

/**
 * A new folder under the OS's temp folder (its name starts with `prefix`) and `tool`, a
 * library-defined tool with a real effect that asks for approval: `write_file({ file, text })`
 * appends the line `text` to `file` there. `lines(file)` reads a file's lines ([] when it does not
 * exist); `remove()` deletes the folder.
 */
export function createFileWriter(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const tool = defineTool({
    name: 'write_file', description: 'Appends a line to a file.', sideEffects: true, approval: 'ask',
    schema: z.object({ file: z.string(), text: z.string() }),
    run({ file, text }) {
      appendFileSync(join(dir, file), `${text}\n`);
      return `wrote ${file}`;
    },
  });
  return {
    dir, tool,
    lines: (file: string): string[] => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8').trim().split('\n') : []),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
