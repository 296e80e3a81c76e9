/**
 * Helpers for the signed-route end-to-end tests: send a provider's raw bytes
 * with its own headers and no hook token, read the JSON answer, and list what
 * the store kept. The signature is made over exactly the bytes sent.
 */
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import type { Action } from '../../schemas/action.ts';
import type { TestServer } from './hookgate.ts';

/** What a request got back: status, headers and the parsed JSON body (null when empty). */
export type Answer = {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { error?: { code: string; message: string } };
  text: string;
};

/** POST these exact bytes with these headers (no hook token unless a header carries one). */
export async function sendRaw(
  server: TestServer,
  name: string,
  body: string,
  headers: Record<string, string>,
): Promise<Answer> {
  const res = await fetch(`${server.url}/hooks/${name}`, { method: 'POST', headers, body });
  const text = await res.text();
  let parsed: Answer['body'] = {};
  try {
    parsed = text ? (JSON.parse(text) as Answer['body']) : {};
  } catch {
    parsed = {};
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Every action the store holds, newest first. */
export async function storedActions(server: TestServer): Promise<Action[]> {
  return (await server.store.listActions({ limit: 100_000 })).map((row) => row.action);
}

/** The generic 401 every failed signature gets. */
export const UNAUTHORIZED_BODY = {
  ok: false,
  error: { code: 'unauthorized', message: expect.any(String) },
};

type Example = Record<string, unknown> & { action?: string };

/** The first example of `event` in @octokit/webhooks-examples (with `action` when given). */
export function octokitExample(event: string, action?: string): Example {
  const all = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{
    name: string;
    examples: Example[];
  }>;
  const examples = all.find((e) => e.name === event)?.examples ?? [];
  const found = examples.find((e) => action === undefined || e.action === action);
  if (!found) throw new Error(`no @octokit/webhooks-examples example for ${event} ${action}`);
  return found;
}

/** Unix seconds now. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Ask `probe` until it answers true; fail after `timeoutMs`. */
export async function until(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
