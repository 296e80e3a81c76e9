/**
 * A stream's pieces counted per turn of the event loop: a peer that frames what it sends in
 * tiny pieces (an HTTP body chunked a byte per chunk) has each parsed and handed over one by
 * one, so a megabyte on the wire is a million callbacks in a few turns while everything else
 * waits. Counting per turn leaves a slow sender alone: its pieces come a turn apart.
 */

/** Past this many pieces in one turn, averaging under MIN_AVERAGE_PIECE bytes, it is refused. */
export const MAX_SMALL_PIECES = 4096;
export const MIN_AVERAGE_PIECE = 64;

/** A counter for one stream: told each piece's size, true once the stream is too fragmented. */
export function createPieceCounter(): (bytes: number) => boolean {
  let pieces = 0;
  let pieceBytes = 0;
  let counting = false;
  const newTurn = () => {
    pieces = 0;
    pieceBytes = 0;
    counting = false;
  };
  return (bytes) => {
    if (!counting) {
      counting = true;
      setImmediate(newTurn);
    }
    pieces++;
    pieceBytes += bytes;
    return pieces > MAX_SMALL_PIECES && pieceBytes < pieces * MIN_AVERAGE_PIECE;
  };
}
