/**
 * Reading what a SQLite WAL holds, for the store probes: how many frames a
 * number of bytes of it is, and which table or index each frame's page
 * belongs to (the file format: a 32-byte header, then frames of a 24-byte
 * header, whose first field is the page number, and one page).
 */
import type { DatabaseSync } from 'node:sqlite';

/** The WAL's own header, before its first frame. */
export const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** How many frames of `pageSize` pages `bytes` of a WAL are. */
export function framesIn(bytes: number, pageSize: number): number {
  return bytes / (pageSize + FRAME_HEADER);
}

/** The table or index (with its page number) of each frame in `frames`, which starts at a frame. */
export function framePages(frames: Buffer, pageSize: number, db: DatabaseSync): string[] {
  const owner = db.prepare('SELECT name FROM dbstat WHERE pageno = ?');
  const pages: string[] = [];
  for (let at = 0; at + FRAME_HEADER + pageSize <= frames.length; at += FRAME_HEADER + pageSize) {
    const page = frames.readUInt32BE(at);
    pages.push(`${(owner.get(page) as { name: string } | undefined)?.name ?? 'page'}#${page}`);
  }
  return pages;
}
