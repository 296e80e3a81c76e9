/**
 * Attack on the console's reader: a large kept body on a request whose run stays running (an
 * agent turn may take minutes). The open detail reads the run again every second, and drew the
 * whole pane again each time, body included: a body of 250,000 line ends (a JSON object padded
 * with white space, under the body limit) took seconds to lay out, so the tab was busy for as
 * long as the run lasted, and any text the operator had selected in the pane to copy was lost
 * at each read. A read that brings what is shown already now leaves the pane as it is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/admin.ts';
import { chrome } from './helpers/console-browser.ts';
import { type RunConsole, startRunConsole } from './helpers/console-run.ts';

// The page's selection (the tests are typed without the DOM's library).
type Selecting = { getSelection(): { selectAllChildren(node: unknown): void; toString(): string } };

describe.skipIf('missing' in chrome)('a running run under a large body', () => {
  let run: RunConsole;

  beforeAll(async () => {
    // The agent's turn lasts until the test is done looking.
    run = await startRunConsole({ keepPayloads: true });
  }, 120_000);

  afterAll(() => run?.stop());

  it('the pane is not drawn again while the run reads the same; a selection in it stays', async () => {
    const { stack, browser } = run;
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
