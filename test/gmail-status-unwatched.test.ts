/**
 * `gmail status` for a mailbox no watch covers: the commonest setup mistake (Gmail's publish
 * right on the topic not granted) makes users.watch fail with 403, so no push ever arrives.
 * The sync that followed cleared the last error, and status printed the mailbox as fine with
 * exit 0 while /readyz said `no watch yet`. Now the failed watch is shown until a watch is
 * made, and a mailbox without one exits 1 (it needs the operator).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { googleError } from './helpers/gmail-stand-in.ts';
import {
  gmailStatus,
  type OidcWorld,
  startGmailService,
  startOidcWorld,
} from './helpers/gmail-binary.ts';
import { tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';

let world: OidcWorld | undefined;
const temps: Array<() => void> = [];
afterEach(async () => {
  await world?.close();
  world = undefined;
  for (const cleanup of temps.splice(0)) cleanup();
});

describe('gmail status without a watch', () => {
  it('names the failed watch and exits 1, after a good sync too', async () => {
    const temp = tempDir();
    temps.push(temp.cleanup);
    world = await startOidcWorld(temp.dir);
    world.gmail.answerNext({ status: 403, body: googleError(403, 'forbidden') });
    await startGmailService(world.file);
    const { file } = world;
    // The sync after the failed watch (no cursor yet: the recent mail) sets a cursor.
    await waitFor('the first sync', async () => (await gmailStatus(file)).cursor !== undefined);
    const status = await gmailStatus(file);
    expect(status.watchExpirationMs).toBeUndefined();
    expect(status.unwatched).toBe(true);
    expect(status.watchError).toMatch(/403/);
    expect(status.code).toBe(1);
  });
});
