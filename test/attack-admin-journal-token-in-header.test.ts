/**
 * Attack (or a proxy's habit): the hook token in an ordinary header, a proxy's copy of the
 * credential or of a URL that held it (`x-copy: <token>`, `referer: https://x/?token=<token>`).
 * With bodies kept, the console's request view showed such headers in full: headers were
 * dropped by name or by a value in a credential's form, never by holding a credential hookgate
 * knows. A kept header holding any hook credential in force (the hook token, a route's secret or
 * verify token...) is now dropped too.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AdminStack, startAdminStack } from './helpers/admin.ts';
import { TOKEN } from './helpers/hookgate.ts';

let stack: AdminStack;
beforeAll(async () => {
  stack = await startAdminStack({}, { admin: { keepPayloads: true } });
});
afterAll(() => stack?.stop());

it('a kept header holding the hook token is not shown; the others are', async () => {
  const res = await stack.post(
    'wake',
    { text: 'x' },
    { headers: { 'x-copy': TOKEN, referer: `https://x/?token=${TOKEN}`, 'x-plain': 'kept' } },
  );
  expect(res.status).toBe(200);
  const { requests } = (await (await stack.adminFetch('/api/requests')).json()) as {
    requests: Array<{ id: string }>;
  };
  const detail = await (await stack.adminFetch(`/api/requests/${requests[0]?.id}`)).text();
  expect(detail).not.toContain(TOKEN);
  expect(detail).toContain('"x-plain":"kept"');
});
