/**
 * The mail flow's emitter builds each message with the settings of the
 * configuration it holds for that message: after a reload, the new
 * `hooks.path` in the envelope and the new `hooks.deliveryRetentionSeconds`
 * (at least a week) for how long the message id is remembered.
 */
import { expect, it } from 'vitest';
import type { Ledger } from '../engine/dispatcher.ts';
import type { Envelope } from '../engine/envelope.ts';
import { createEmitter, type HeldRoutes } from '../engine/gmail/emit.ts';
import type { CompiledRoute, RouteTable } from '../engine/ingress/routes.ts';
import type { MailItem } from '../engine/gmail/sync.ts';

const DAY_S = 24 * 60 * 60;
const ITEM = { id: 'm-1', from: 'a@example.com', subject: 's', snippet: 'x' } as MailItem;

it('each message takes the path and the id window of the configuration held for it', async () => {
  const paths: string[] = [];
  const windows: number[] = [];
  const route = {
    accept: async (envelope: Envelope) => {
      paths.push(envelope.path);
      return { actions: [], response: {} };
    },
  } as unknown as CompiledRoute;
  const routes = { find: () => route, maxKeyWindowMs: 0 } as RouteTable;
  const ledger = {
    hold: async (claims: ReadonlyArray<{ windowMs: number }>) => {
      windows.push(...claims.map((claim) => claim.windowMs));
      return { previous: undefined, release: () => undefined };
    },
    commit: async () => ({ previous: undefined }),
  } as unknown as Ledger;
  let hooks = { path: '/hooks', deliveryRetentionSeconds: 3 * DAY_S };
  const emit = createEmitter({
    routes: (): HeldRoutes => ({ routes, hooks, release: () => undefined }),
    ledger,
  });
  await emit('me@example.com', ITEM);
  // As a reload would swap them in.
  hooks = { path: '/in', deliveryRetentionSeconds: 30 * DAY_S };
  await emit('me@example.com', { ...ITEM, id: 'm-2' });
  expect(paths).toEqual(['/hooks/gmail', '/in/gmail']);
  expect(windows).toEqual([7 * DAY_S * 1000, 30 * DAY_S * 1000]);
});
