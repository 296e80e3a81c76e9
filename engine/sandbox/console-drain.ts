/**
 * The transform process's check of what a context's console drain returned
 * (JSON text of {lines, dropped}). User code shares the drain's context and
 * can tamper with it, so the text is checked and capped here before it is
 * sent; undefined means "tampered with" and fails the call. The server
 * checks again.
 */
import {
  CONSOLE_LINE_CHARS,
  CONSOLE_LINES_PER_CALL,
  type ConsoleLine,
  MAX_DROPPED,
} from './protocol.ts';
import { parseForeignJson } from '../foreign-json.ts';
import { headUnits } from '../text-cut.ts';

export type Drained = { console: ConsoleLine[]; droppedLines: number };

const DRAIN_CHARS = CONSOLE_LINES_PER_CALL * (CONSOLE_LINE_CHARS * 6 + 64) + 1024;

/** The drain's text, checked and capped here too (the server checks again). */
export function checkDrain(text: unknown): Drained | undefined {
  if (typeof text !== 'string' || text.length > DRAIN_CHARS) return undefined;
  let value: unknown;
  try {
    // Tampered text could hold a key that misleads this process's later parses (foreign-json.ts).
    value = parseForeignJson(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const { lines, dropped } = value as { lines?: unknown; dropped?: unknown };
  if (!Array.isArray(lines) || !Number.isSafeInteger(dropped) || (dropped as number) < 0)
    return undefined;
  const kept: ConsoleLine[] = [];
  for (const line of lines.slice(0, CONSOLE_LINES_PER_CALL)) {
    const { level, text: said } = (line ?? {}) as { level?: unknown; text?: unknown };
    if (typeof said !== 'string') return undefined;
    if (level !== 'info' && level !== 'warn' && level !== 'error' && level !== 'debug')
      return undefined;
    kept.push({ level, text: headUnits(said, CONSOLE_LINE_CHARS) });
  }
  const extra = lines.length - kept.length;
  return { console: kept, droppedLines: Math.min(MAX_DROPPED, (dropped as number) + extra) };
}
