/**
 * Attack on the console's reader: a large kept body on a request whose run stays running (an
 * agent turn may take minutes). The open detail reads the run again every second, and drew the
 * whole pane again each time, body included: a body of 250,000 line ends (a JSON object padded
 * with white space, under the body limit) took seconds to lay out, so the tab was busy for as
 * long as the run lasted, and any text the operator had selected in the pane to copy was lost
 * at each read. A read that brings what is shown already now leaves the pane as it is.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack, startAdminStack } from './helpers/admin.ts';
import { chrome, launchChromium } from './helpers/console-browser.ts';

// The page's selection (the tests are typed without the DOM's library).
type Selecting = { getSelection(): { selectAllChildren(node: unknown): void; toString(): string } };

describe.skipIf('missing' in chrome)('a running run under a large body', () => {
  let browser: Browser;
  let stack: AdminStack;
  let runner: Server;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    // The agent's turn lasts until the test is done looking.
    runner = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        held.then(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ reply: 'done' }));
        });
      });
    });
    await new Promise<void>((resolve) => runner.listen(0, '127.0.0.1', resolve));
    const runnerUrl = `http://127.0.0.1:${(runner.address() as AddressInfo).port}`;
    stack = await startAdminStack(
      {
        agents: {
          list: [{ id: 'main', default: true, runner: { kind: 'http', url: `${runnerUrl}/run` } }],
        },
        runtime: { heartbeat: { every: 'off' } },
      },
      { runtime: true, admin: { keepPayloads: true } },
    );
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    release();
    await browser?.close();
    await stack?.stop();
    runner.closeAllConnections();
    await new Promise((resolve) => runner.close(resolve));
  });

  it('the pane is not drawn again while the run reads the same; a selection in it stays', async () => {
    const body = `{"message":"look"${'\n'.repeat(250_000)}}`;
    expect((await stack.post('agent', body)).status).toBe(200);
    const page = await browser.newPage();
    const id = stack.journal.list()[0]?.id as string;
    let reads = 0;
    page.on('response', (answer) => {
      if (new URL(answer.url()).pathname === `/api/requests/${id}`) reads += 1;
    });
    await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.locator(`#request-rows tr[data-id="${id}"]`).click();
    await expect
      .poll(() => page.locator('#detail .state').first().textContent(), { timeout: 30_000 })
      .toBe('running');
    // The operator selects the prompt to copy it.
    await page.locator('#detail pre.prompt').evaluate((pre) => {
      (pre as unknown as { marked: boolean }).marked = true;
      (globalThis as unknown as Selecting).getSelection().selectAllChildren(pre);
    });
    const seen = reads;
    // Two more reads of the running run.
    await expect.poll(() => reads, { timeout: 30_000 }).toBeGreaterThanOrEqual(seen + 2);
    const after = await page.locator('#detail pre.prompt').evaluate((pre) => ({
      same: (pre as unknown as { marked?: boolean }).marked === true,
      selected: (globalThis as unknown as Selecting).getSelection().toString(),
    }));
    expect(after.same).toBe(true);
    expect(after.selected).toContain('look');
    await page.close();
  }, 120_000);
});
