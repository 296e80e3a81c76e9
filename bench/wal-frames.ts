/**
 * Reading what a SQLite WAL holds, for the store probes (the file format: a
 * 32-byte header, then frames of a 24-byte header, whose first field is the
 * page number, and one page).
 */
import type { DatabaseSync } from 'node:sqlite';

/** The WAL's own header, before its first frame. */
export const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** One frame: the page it holds and the table or index that page belongs to. */
export type Frame = { page: number; owner: string };

/** The page size a WAL's header gives. */
export function readPageSize(wal: Buffer): number {
  return wal.readUInt32BE(8);
}

/**
 * The header's salts, which a checkpoint that restarts the WAL changes: a probe that reads the
 * WAL's growth compares them before and after, since a restarted WAL is rewritten from its start.
 */
export function readSalts(wal: Buffer): string {
  return wal.subarray(16, 24).toString('hex');
}

/** How many frames of `pageSize` pages `bytes` of a WAL are. */
export function countFrames(bytes: number, pageSize: number): number {
  return bytes / (pageSize + FRAME_HEADER);
}

/** The frames in `frames` (which starts at a frame), each with its page's table or index. */
export function readFrames(frames: Buffer, pageSize: number, db: DatabaseSync): Frame[] {
  const ownerOf = db.prepare('SELECT name FROM dbstat WHERE pageno = ?');
  const read: Frame[] = [];
  for (let at = 0; at + FRAME_HEADER + pageSize <= frames.length; at += FRAME_HEADER + pageSize) {
    const page = frames.readUInt32BE(at);
    const owner = (ownerOf.get(page) as { name: string } | undefined)?.name ?? 'a page no table holds';
    read.push({ page, owner });
  }
  return read;
}
