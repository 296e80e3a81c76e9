/**
 * The console over an agent run that the test holds: hookgate with its runtime and admin
 * listener, an HTTP runner standing in for the agent, and Chromium. A run answers only once the
 * test releases it (an agent turn that takes its time), so the console can be watched
 * following a run that is queued or running; the first runs can be made to fail instead (a
 * dead run, with Retry).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './admin.ts';
import { launchChromium } from './console-browser.ts';
import { waitForFinal } from './runtime.ts';

export type RunConsole = {
  stack: AdminStack;
  browser: Browser;
  /** Lets every run the runner holds answer, now and from then on. */
  release(): void;
  /** Releases the runs; closes the browser, the stack and the runner. */
  stop(): Promise<void>;
};

export type RunConsoleOptions = {
  /** How many runs answer 503 first (Infinity: every one); the runs after them are held. */
  failing?: number;
  /** Runtime settings over { heartbeat: { every: 'off' } }. */
  runtime?: Record<string, unknown>;
  keepPayloads?: boolean;
};

/** The stack, its held runner and a browser; what started is stopped again if the rest fails. */
export async function startRunConsole(options: RunConsoleOptions = {}): Promise<RunConsole> {
  const failing = options.failing ?? 0;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  const runner = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls += 1;
      if (calls <= failing) {
        res.writeHead(503).end('busy');
        return;
      }
      held.then(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ reply: 'Done.' }));
      });
    });
  });
  let stack: AdminStack | undefined;
  let browser: Browser | undefined;
  const stop = async () => {
    release();
    await browser?.close();
    await stack?.stop();
    runner.closeAllConnections();
    await new Promise((resolve) => runner.close(resolve));
  };
  try {
    await new Promise<void>((resolve) => runner.listen(0, '127.0.0.1', resolve));
    const runnerUrl = `http://127.0.0.1:${(runner.address() as AddressInfo).port}`;
    stack = await startAdminStack(
      {
        agents: {
          list: [{ id: 'main', default: true, runner: { kind: 'http', url: `${runnerUrl}/run` } }],
        },
        runtime: { heartbeat: { every: 'off' }, ...options.runtime },
      },
      { runtime: true, admin: { keepPayloads: options.keepPayloads ?? false } },
    );
    browser = await launchChromium();
  } catch (error) {
    await stop();
    throw error;
  }
  return { stack, browser, release, stop };
}

/** A new page on the console, logged in with the admin token, its live stream on. */
export async function openConsole(run: RunConsole): Promise<Page> {
  const page = await run.browser.newPage({ viewport: { width: 1360, height: 900 } });
  await page.goto(`${run.stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
  await page.locator('#live.on').waitFor();
  return page;
}

/** Sends an agent request and opens its detail on `page` once its run shows queued or running. */
export async function followNewRun(run: RunConsole, page: Page, message: string) {
  expect((await run.stack.post('agent', { message })).status).toBe(200);
  const record = run.stack.journal.list()[0];
  await page.locator(`#request-rows tr[data-id="${record?.id}"]`).click();
  await expect
    .poll(() => page.locator('#detail .state').first().textContent())
    .toMatch(/queued|running/);
  return { id: record?.id as string, actionId: record?.actions[0]?.id as string };
}

/** Releases the held runs and waits for `actionId` to end done: does `page`'s detail show it done? */
export async function shownDoneOnceReleased(run: RunConsole, page: Page, actionId: string) {
  run.release();
  await waitForFinal(run.stack.dataDir, actionId, 20_000, ['done']);
  return page
    .locator('#detail .state.done')
    .waitFor({ timeout: 10_000 })
    .then(() => true)
    .catch(() => false);
}
