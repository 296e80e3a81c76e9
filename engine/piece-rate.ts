/**
 * A stream's pieces counted as the event loop sees them: a peer that frames what it sends in
 * tiny pieces (an HTTP body chunked a byte per chunk) has each parsed and handed over one by
 * one, so a megabyte on the wire is a million callbacks. Two bounds. Many small pieces in one
 * turn hold the loop: past MAX_SMALL_PIECES the reader pauses its stream until the next turn
 * (backpressure, not a refusal: an honest client that streams a chunk per JSON token can land
 * tens of thousands of them at once on a busy server, and was refused so at random). Far more
 * small pieces over the whole stream than an honest sender makes cost a callback each however
 * they are paced: past the caller's bound the stream is refused. The first piece of each turn
 * is not counted: a slow sender's trickle comes a piece a turn.
 */

/** Small pieces (averaging under MIN_AVERAGE_PIECE bytes) one turn may bring before a pause. */
export const MAX_SMALL_PIECES = 16_384;
/** Small pieces a whole stream may bring, unless its caller allows more. */
export const MAX_SMALL_PIECES_IN_ALL = 65_536;
export const MIN_AVERAGE_PIECE = 64;

/**
 * The whole-body bound for a body of at most `maxBytes`: half as many pieces as bytes, and at
 * least MAX_SMALL_PIECES_IN_ALL. A body whose pieces average two bytes or more (a chunk per
 * JSON token) fits it whatever its size; a byte per chunk is stopped half way.
 */
export function smallPiecesAllowed(maxBytes: number): number {
  return Math.max(MAX_SMALL_PIECES_IN_ALL, Math.floor(maxBytes / 2));
}

/**
 * What the reader does after a piece: go on; pause the stream until the next turn of the
 * event loop (once per turn); or refuse the stream.
 */
export type PieceVerdict = 'go' | 'pause' | 'refuse';

/** A counter for one stream, told each piece's size. */
export function createPieceCounter(
  maxInAll: number = MAX_SMALL_PIECES_IN_ALL,
): (bytes: number) => PieceVerdict {
  let turnPieces = 0;
  let turnBytes = 0;
  let pieces = 0;
  let pieceBytes = 0;
  let turnStarted = false;
  let paused = false;
  const newTurn = () => {
    turnStarted = false;
    paused = false;
    turnPieces = 0;
    turnBytes = 0;
  };
  return (bytes) => {
    if (!turnStarted) {
      turnStarted = true;
      setImmediate(newTurn);
      return 'go';
    }
    turnPieces++;
    turnBytes += bytes;
    pieces++;
    pieceBytes += bytes;
    if (pieces > maxInAll && pieceBytes < pieces * MIN_AVERAGE_PIECE) return 'refuse';
    if (!paused && turnPieces > MAX_SMALL_PIECES && turnBytes < turnPieces * MIN_AVERAGE_PIECE) {
      paused = true;
      return 'pause';
    }
    return 'go';
  };
}
