/**
 * Attack: the guard holds undici's parser for the rest of the turn past 16,384 tiny pieces,
 * also when the caller's handler has just paused it (its buffer full): that caller resumes as
 * soon as its reader drains it, in the same turn, and the parser went on with everything the
 * socket held, up to the whole answer's bound.
 */
import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTinyChunkUpstream, type TinyChunkUpstream } from './helpers/tiny-chunk-upstream.ts';
import { createGuardedDispatcher } from '../engine/outbound/fragment-guard.ts';
import { MAX_SMALL_PIECES } from '../engine/piece-rate.ts';

// 60,000 one-byte chunks (under the 65,536 refusal), written at once.
let upstream: TinyChunkUpstream;
beforeAll(async () => {
  upstream = await startTinyChunkUpstream(60_000);
});
afterAll(() => upstream?.close());

it("the hold holds also when the caller's own pause lands on the piece it holds at", async () => {
  const { port } = upstream;
  let inTurn = 0;
  let most = 0;
  let turnStarted = false;
  let counted = 0;
  const guarded = createGuardedDispatcher(1024 * 1024);
  const done = new Promise<void>((resolve, reject) => {
    const handler: Dispatcher.DispatchHandler = {
      onResponseData(controller, chunk) {
        inTurn++;
        most = Math.max(most, inTurn);
        // The turn as the guard sees it: its first piece is not counted.
        if (!turnStarted) {
          turnStarted = true;
          setImmediate(() => {
            turnStarted = false;
            inTurn = 0;
            counted = 0;
          });
          return;
        }
        counted += chunk.length > 0 ? 1 : 0;
        // A buffer that filled on this piece: paused, resumed once the reader drained it.
        if (counted === MAX_SMALL_PIECES + 1) {
          controller.pause();
          queueMicrotask(() => controller.resume());
        }
      },
      onResponseEnd: () => resolve(),
      onResponseError: (_controller, err) => reject(err),
    };
    guarded.dispatcher.dispatch(
      { origin: `http://127.0.0.1:${port}`, path: '/', method: 'POST', body: '{}' },
      handler,
    );
  });
  await done;
  await guarded.close();
  // A hold that held leaves a turn the 16,384 pieces plus the rest of one 64 KiB read.
  expect(most).toBeLessThan(MAX_SMALL_PIECES + 11_000);
}, 60_000);
