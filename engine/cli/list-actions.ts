/**
 * `hookgate actions`: what came in, read from the store, newest first.
 * Text for people; with --json one complete action per line for tools.
 * Both are safe to print: request text cannot drive the terminal.
 */
import type { StoredAction } from '../queue/action-store.ts';
import { openStoreViews } from '../store/backend.ts';
import { clipLine } from '../one-line.ts';
import { wrappedContent } from '../safety.ts';
import { type StoreFlags, storeLocation } from './store-location.ts';
import { jsonLine, terminalText } from './terminal-text.ts';

export type ListFlags = StoreFlags & { json?: boolean; limit?: string };

/** A listing command's --limit (20 when absent), or undefined once it said why it refuses it. */
export function listLimit(command: string, raw: string | undefined): number | undefined {
  // Digits only: Number() also takes 1e20, 0x2 and blanks, which the store then refuses.
  const limit = raw === undefined ? 20 : /^[1-9][0-9]*$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(limit)) return limit;
  process.stderr.write(`hookgate ${command}: --limit must be a positive integer\n`);
  return undefined;
}

/** Print the accepted actions; returns the exit status. */
export async function listActions(flags: ListFlags, out: (line: string) => void): Promise<number> {
  const limit = listLimit('actions', flags.limit);
  if (limit === undefined) return 2;
  const at = storeLocation(flags, process.env, process.cwd());
  const say = (line: string) => out(terminalText(line));
  const views = await openStoreViews(at.dataDir, at.store);
  if (typeof views === 'string') {
    if (!flags.json) say(`No actions: ${views.charAt(0).toLowerCase()}${views.slice(1)}`);
    return 0;
  }
  let rows: StoredAction[];
  try {
    rows = await views.listActions(limit);
  } finally {
    await views.close();
  }
  const dataDir = views.describe;
  if (flags.json) {
    for (const row of rows)
      out(jsonLine({ ...row.action, state: row.state, attempts: row.attempts }));
  } else if (rows.length === 0) say(`No actions in ${dataDir}.`);
  else for (const row of rows) say(formatRow(row));
  return 0;
}

/** One human-readable line per action (print it through terminalText). */
export function formatRow({ action, state }: StoredAction): string {
  const head = `${action.receivedAt}  ${action.kind.padEnd(5)}  ${action.id}  ${state.padEnd(7)}  hook=${action.hook}`;
  if (action.kind === 'wake') return `${head}  mode=${action.mode}  ${quote(action.text)}`;
  return `${head}  agent=${action.agentId}  session=${action.sessionKey}  ${quote(action.message)}`;
}

function quote(text: string): string {
  return JSON.stringify(clipLine(wrappedContent(text), 80));
}
