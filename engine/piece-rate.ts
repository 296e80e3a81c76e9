/**
 * A stream's pieces counted as the event loop sees them: a peer that frames what it sends in
 * tiny pieces (an HTTP body chunked a byte per chunk) has each parsed and handed over one by
 * one, so a megabyte on the wire is a million callbacks while everything else waits. The first
 * piece of each turn is not counted: a slow sender's trickle comes a piece a turn. The others
 * are counted over the whole stream, so pacing the pieces a few thousand a turn does not
 * escape the bound.
 */

/** Past this many pieces beyond each turn's first, averaging under MIN_AVERAGE_PIECE bytes. */
export const MAX_SMALL_PIECES = 4096;
export const MIN_AVERAGE_PIECE = 64;

/** A counter for one stream: told each piece's size, true once the stream is too fragmented. */
export function createPieceCounter(): (bytes: number) => boolean {
  let pieces = 0;
  let pieceBytes = 0;
  let turnStarted = false;
  const newTurn = () => {
    turnStarted = false;
  };
  return (bytes) => {
    if (!turnStarted) {
      turnStarted = true;
      setImmediate(newTurn);
      return false;
    }
    pieces++;
    pieceBytes += bytes;
    return pieces > MAX_SMALL_PIECES && pieceBytes < pieces * MIN_AVERAGE_PIECE;
  };
}
