/**
 * A stream's pieces counted as the event loop sees them: a peer that frames what it sends in
 * tiny pieces (an HTTP body chunked a byte per chunk) has each parsed and handed over one by
 * one, so a megabyte on the wire is a million callbacks while everything else waits. Two
 * bounds: many small pieces in one turn (what holds the loop), and far more small pieces over
 * the whole stream than an honest sender makes (pacing them a thousand a turn still costs a
 * callback each). The first piece of each turn is not counted: a slow sender's trickle comes a
 * piece a turn. A streaming client that sends a chunk per JSON token (Python's iterencode)
 * stays under both.
 */

/** Small pieces (averaging under MIN_AVERAGE_PIECE bytes) one turn may bring. */
export const MAX_SMALL_PIECES = 16_384;
/** Small pieces a whole stream may bring. */
export const MAX_SMALL_PIECES_IN_ALL = 65_536;
export const MIN_AVERAGE_PIECE = 64;

/** A counter for one stream: told each piece's size, true once the stream is too fragmented. */
export function createPieceCounter(): (bytes: number) => boolean {
  let turnPieces = 0;
  let turnBytes = 0;
  let pieces = 0;
  let pieceBytes = 0;
  let turnStarted = false;
  const newTurn = () => {
    turnStarted = false;
    turnPieces = 0;
    turnBytes = 0;
  };
  return (bytes) => {
    if (!turnStarted) {
      turnStarted = true;
      setImmediate(newTurn);
      return false;
    }
    turnPieces++;
    turnBytes += bytes;
    pieces++;
    pieceBytes += bytes;
    return (
      (turnPieces > MAX_SMALL_PIECES && turnBytes < turnPieces * MIN_AVERAGE_PIECE) ||
      (pieces > MAX_SMALL_PIECES_IN_ALL && pieceBytes < pieces * MIN_AVERAGE_PIECE)
    );
  };
}
