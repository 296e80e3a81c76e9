/**
 * Reading a JSON-lines log that the server may be writing at that moment: a
 * reader can see part of a write, so a last line without its newline is left
 * for the next read instead of failing the parse.
 */
import { readFileSync } from 'node:fs';

/** The complete lines of a JSON-lines log file, parsed. */
export function readLogLines(file: string): Array<Record<string, unknown>> {
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
