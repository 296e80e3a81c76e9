/**
 * Attack: a flood of refused requests while the operator watches a filtered list (the filter
 * `authenticated=true`, which lists the real traffic alone). Each batch the live stream brought
 * made the console read the whole filtered list again, every 250 ms for as long as the flood
 * lasted, although no refusal could be in it. The console now judges each streamed row from
 * its summary and reads the list again only when one may match; a real request sent during the
 * flood still shows.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type AdminStack } from './helpers/admin.ts';
import { chrome, rowIds, useConsoleStack } from './helpers/console-browser.ts';

// Rounds of refusals, each a few at once, each seen live before the next: the flood spans
// at least as many live batches (and, before, list reads) as rounds.
const ROUNDS = 12;
const PER_ROUND = 10;

/** Count the list reads `page` asks for from now on (not a request's detail, /api/requests/…). */
function countListReads(page: Page): () => number {
  let reads = 0;
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/requests') reads += 1;
  });
  return () => reads;
}

/** The id of the newest request the journal holds. */
const newest = (stack: AdminStack) => stack.journal.list()[0]?.id as string;

describe.skipIf('missing' in chrome)(
  'attack: a flood of refusals makes a filtered console list be read per batch',
  () => {
    // No lockout: every wrong token is a 401, and the real requests from the same address pass.
    const held = useConsoleStack({ hooks: { authRateLimit: { maxFailures: 1_000_000 } } });
    let stack: AdminStack;
    let page: Page;
    // An unfiltered console of its own (its own stream), which shows the flood as it goes.
    let watcher: Page;

    beforeAll(async () => {
      stack = held.stack;
      const open = async (target: Page) => {
        await target.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
        await target.locator('#live.on').waitFor();
        return target;
      };
      page = await open(await held.browser.newPage());
      watcher = await open(await (await held.browser.newContext()).newPage());
    }, 120_000);

    it('under authenticated=true the refusals cause no list reads, and a real request shows', async () => {
      expect((await stack.post('wake', { text: 'before' })).status).toBe(200);
      const before = newest(stack);
      // Streamed before the filter is set: the filtered read that follows already holds it.
      await expect.poll(async () => (await rowIds(page))[0]).toBe(before);
      await page.selectOption('#filters select[name="authenticated"]', 'true');
      await page.click('#filters button[type="submit"]');
      await expect.poll(() => rowIds(page)).toEqual([before]);

      const reads = countListReads(page);
      let during = '';
      for (let round = 0; round < ROUNDS; round++) {
        const refused = Array.from({ length: PER_ROUND }, () =>
          stack.post('wake', { text: 'flood' }, { token: 'wrong' }),
        );
        for (const response of await Promise.all(refused)) expect(response.status).toBe(401);
        const last = newest(stack);
        await expect.poll(async () => (await rowIds(watcher))[0], { timeout: 30_000 }).toBe(last);
        if (round === ROUNDS / 2) {
          expect((await stack.post('wake', { text: 'during' })).status).toBe(200);
          during = newest(stack);
        }
      }
      // One more real request after the flood: once it shows, every batch of the flood has
      // reached the tab (the stream keeps order), and any read it asked for has been made.
      expect((await stack.post('wake', { text: 'after' })).status).toBe(200);
      const after = newest(stack);
      await expect.poll(() => rowIds(page), { timeout: 30_000 }).toEqual([after, during, before]);

      // A read or two for each real request (its row may stream again as its run ends; fewer
      // when rows fall in one batch); before, one per 250 ms of flood.
      expect(reads()).toBeLessThanOrEqual(4);
    }, 120_000);

    it.each([
      ['a refusal under authenticated=true', { authenticated: false }, 'authenticated=true', false],
      [
        'a refusal under authenticated=false',
        { authenticated: false },
        'authenticated=false',
        true,
      ],
      ['401 under status=2xx', { status: 401 }, 'status=2xx', false],
      ['401 under status=4XX', { status: 401 }, 'status=4XX', true],
      ['401 under status=401', { status: 401 }, 'status=401', true],
      ['401 under status=403', { status: 401 }, 'status=403', false],
      ['401 under a status the server refuses', { status: 401 }, 'status=40', true],
      ['another route', { hook: 'wake' }, 'route=agent', false],
      ['its hook as the route', { hook: 'wake' }, 'route=wake', true],
      ['its route id as the route', { hook: 'x', route: 'r1' }, 'route=r1', true],
      ['a route padded with blanks', { hook: 'wake' }, 'route=+wake+', true],
      ['a session within its key', { sessions: ['hook:gh:42'] }, 'session=gh', true],
      ['a session not in its keys', { sessions: ['hook:gh:42'] }, 'session=jira', false],
      ['its id searched', { id: 'r-1' }, 'q=r-1', true],
      ['its delivery id searched', { deliveryId: 'd-1' }, 'q=d-1', true],
      ['an action id searched', { actionIds: ['a-1'] }, 'q=a-1', true],
      ['an id not its own (a search is not judged)', { id: 'r-1' }, 'q=r-2', true],
      ['a run state, no action', { actionIds: [] }, 'state=dead', false],
      ['a run state, an action', { actionIds: ['a-1'] }, 'state=dead', true],
      [
        'a key given twice',
        { authenticated: false },
        'authenticated=true&authenticated=true',
        true,
      ],
      ['no filter', {}, '', true],
    ])('mayMatch: %s', async (_name, fields, filter, expected) => {
      const summary = {
        id: 'r-0',
        time: '2026-01-01T00:00:00.000Z',
        method: 'POST',
        hook: 'wake',
        status: 200,
        authenticated: true,
        durationMs: 1,
        replayed: false,
        sessions: [],
        actionIds: [],
        kept: false,
        ...fields,
      };
      const judged = await page.evaluate(
        ([row, query]) =>
          (
            globalThis as unknown as { mayMatch(summary: unknown, filter: string): boolean }
          ).mayMatch(row, query),
        [summary, filter] as const,
      );
      expect(judged).toBe(expected);
    });
  },
);
