/**
 * The server's check of everything a transform process sends: a frame's
 * text becomes a typed message only if its shape, types, string lengths and
 * array lengths are what an honest process sends. Pure: the caller decides
 * what a refusal costs (the process is killed and its calls fail).
 */
import {
  CONSOLE_LINE_CHARS,
  CONSOLE_LINES_PER_CALL,
  type ConsoleLine,
  type FailureKind,
  type FromSandbox,
  type LoadError,
  MAX_DROPPED,
  MAX_REPORTED_FILES,
  MESSAGE_CHARS,
  MESSAGE_DEPTH,
  maxMessageBytes,
  PATH_CHARS,
} from './protocol.ts';
import { nestsDeeperThan } from './frames.ts';
import { parseForeignJson } from '../foreign-json.ts';
import { overUtf8Bytes } from '../utf8.ts';

/** A checked message, or why the text was refused. */
export type Checked = { ok: true; message: FromSandbox } | { ok: false; reason: string };

const FAILURE_KINDS: ReadonlySet<string> = new Set([
  'threw',
  'timeout',
  'memory',
  'output',
  'unavailable',
]);
const CONSOLE_LEVELS: ReadonlySet<string> = new Set(['info', 'warn', 'error', 'debug']);
const LOG_LEVELS: ReadonlySet<string> = new Set(['info', 'warn', 'error']);

type Caps = { maxOutputBytes: number; maxModules: number };
type Fields = Record<string, unknown>;

class Refusal extends Error {}

function refuse(reason: string): never {
  throw new Refusal(reason);
}

/** Check one frame's text against the protocol and the caps. */
export function checkMessage(text: string, caps: Caps): Checked {
  if (nestsDeeperThan(text, MESSAGE_DEPTH)) return { ok: false, reason: 'nested too deeply' };
  let value: unknown;
  try {
    value = parseForeignJson(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  try {
    const message = checkValue(value, caps);
    // Characters, never more than the bytes: an honest message of the type is no longer.
    if (message.type !== 'result' && text.length > maxMessageBytes(message.type, caps.maxModules))
      refuse(`${message.type}: longer than an honest one`);
    return { ok: true, message };
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, reason: err.message };
    throw err;
  }
}

function checkValue(value: unknown, caps: Caps): FromSandbox {
  const fields = record(value, 'message');
  const type = fields['type'];
  if (type === 'result') return checkResult(fields, caps);
  if (type === 'loaded') {
    only(fields, ['type', 'errors']);
    const errors = list(fields['errors'], caps.maxModules, 'errors').map(loadError);
    return { type, errors };
  }
  if (type === 'rebuilding' || type === 'rebuilt') {
    only(fields, ['type']);
    return { type };
  }
  if (type === 'loading') {
    only(fields, ['type', 'key']);
    return { type, key: text(fields['key'], MESSAGE_CHARS, 'loading.key') };
  }
  if (type === 'compiled') {
    only(fields, ['type', 'key', 'files']);
    const files = list(fields['files'], MAX_REPORTED_FILES, 'compiled.files').map(reportedFile);
    return { type, key: text(fields['key'], MESSAGE_CHARS, 'compiled.key'), files };
  }
  if (type === 'log') {
    only(fields, ['type', 'key', 'level', 'message']);
    const level = fields['level'];
    if (typeof level !== 'string' || !LOG_LEVELS.has(level)) refuse('log.level');
    return {
      type,
      key: text(fields['key'], MESSAGE_CHARS, 'log.key'),
      level: level as 'info' | 'warn' | 'error',
      message: text(fields['message'], MESSAGE_CHARS, 'log.message'),
    };
  }
  return refuse('unknown message type');
}

function checkResult(fields: Fields, caps: Caps): FromSandbox {
  only(fields, ['type', 'id', 'output', 'failure', 'console', 'droppedLines', 'next']);
  const id = fields['id'];
  if (!Number.isSafeInteger(id) || (id as number) < 1) refuse('result.id');
  const next = fields['next'];
  if (next !== undefined && (!Number.isSafeInteger(next) || (next as number) < 1 || next === id))
    refuse('result.next');
  const droppedLines = fields['droppedLines'];
  if (!Number.isSafeInteger(droppedLines) || (droppedLines as number) < 0)
    refuse('result.droppedLines');
  if ((droppedLines as number) > MAX_DROPPED) refuse('result.droppedLines');
  const consoleLines = list(fields['console'], CONSOLE_LINES_PER_CALL, 'result.console').map(
    consoleLine,
  );
  const message: FromSandbox = {
    type: 'result',
    id: id as number,
    console: consoleLines,
    droppedLines: droppedLines as number,
    ...(next !== undefined && { next: next as number }),
  };
  if (fields['output'] !== undefined) {
    const output = fields['output'];
    if (typeof output !== 'string') refuse('result.output: not a string');
    if (overUtf8Bytes(output, caps.maxOutputBytes))
      refuse(`result.output: longer than ${caps.maxOutputBytes} bytes`);
    message.output = output;
  }
  if (fields['failure'] !== undefined) {
    if (message.output !== undefined) refuse('result has both output and failure');
    const failure = record(fields['failure'], 'result.failure');
    only(failure, ['kind', 'message']);
    const kind = failure['kind'];
    if (typeof kind !== 'string' || !FAILURE_KINDS.has(kind)) refuse('result.failure.kind');
    message.failure = {
      kind: kind as FailureKind,
      message: text(failure['message'], MESSAGE_CHARS, 'result.failure.message'),
    };
  }
  return message;
}

function consoleLine(value: unknown): ConsoleLine {
  const fields = record(value, 'console line');
  only(fields, ['level', 'text']);
  const level = fields['level'];
  if (typeof level !== 'string' || !CONSOLE_LEVELS.has(level)) refuse('console line level');
  return {
    level: level as ConsoleLine['level'],
    text: text(fields['text'], CONSOLE_LINE_CHARS, 'console line text'),
  };
}

function reportedFile(value: unknown): { file: string; signature: string } {
  const fields = record(value, 'compiled file');
  only(fields, ['file', 'signature']);
  return {
    file: text(fields['file'], PATH_CHARS, 'compiled file path'),
    signature: text(fields['signature'], PATH_CHARS, 'compiled file signature'),
  };
}

function loadError(value: unknown): LoadError {
  const fields = record(value, 'load error');
  only(fields, ['key', 'message']);
  return {
    key: text(fields['key'], MESSAGE_CHARS, 'load error key'),
    message: text(fields['message'], MESSAGE_CHARS, 'load error message'),
  };
}

function record(value: unknown, what: string): Fields {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    refuse(`${what}: not an object`);
  return value as Fields;
}

function only(fields: Fields, allowed: readonly string[]): void {
  for (const key of Object.keys(fields)) {
    // The key is the process's text: only a short, quoted piece of it reaches the log.
    if (!allowed.includes(key)) refuse(`unexpected field ${JSON.stringify(key.slice(0, 40))}`);
  }
}

function list(value: unknown, max: number, what: string): unknown[] {
  if (!Array.isArray(value)) refuse(`${what}: not an array`);
  if (value.length > max) refuse(`${what}: more than ${max} items`);
  return value;
}

function text(value: unknown, max: number, what: string): string {
  if (typeof value !== 'string') refuse(`${what}: not a string`);
  if (value.length > max) refuse(`${what}: longer than ${max} characters`);
  return value;
}
