/**
 * A request's detail left open while its run changes: after Retry on a dead run, the pane
 * follows the run to its end (done, with the agent's reply) without a click. It showed the run
 * once more, queued or running, and then never again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chrome } from './helpers/console-browser.ts';
import {
  openConsole,
  type RunConsole,
  shownDoneOnceReleased,
  startRunConsole,
} from './helpers/console-run.ts';
import { waitForFinal } from './helpers/runtime.ts';

describe.skipIf('missing' in chrome)('a retried run in an open detail', () => {
  let run: RunConsole;

  beforeAll(async () => {
    // First attempt fails (dead after one attempt); the retried one answers only once the test
    // has seen the pane show the run again (so the run is surely not done by then).
    run = await startRunConsole({
      failing: 1,
      runtime: { retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 } },
    });
  }, 120_000);

  afterAll(() => run?.stop());

  it('shows the run done once it is done, without a click', async () => {
    const page = await openConsole(run);
    expect((await run.stack.post('agent', { message: 'do it' })).status).toBe(200);
    const record = run.stack.journal.list()[0];
    const actionId = record?.actions[0]?.id as string;
    await waitForFinal(run.stack.dataDir, actionId);
    await page.locator(`#request-rows tr[data-id="${record?.id}"]`).click();
    await expect.poll(() => page.locator('#detail .state').first().textContent()).toBe('dead');
    await page.click('#detail button.retry');
    await page.locator('#detail .note', { hasText: 'queued again' }).waitFor();
    // The pane shows the run again (no longer dead).
    await expect
      .poll(() => page.locator('#detail .state').first().textContent())
      .toMatch(/queued|running/);
    const done = await shownDoneOnceReleased(run, page, actionId);
    expect(done, 'the open detail shows the run done').toBe(true);
  }, 90_000);
});
