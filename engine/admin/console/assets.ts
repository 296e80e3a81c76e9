/**
 * The console's files: one HTML page, one script, one stylesheet, an icon, read
 * once at start and served as they are (no build step, no inline script:
 * the page's Content-Security-Policy allows only these files).
 */
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { sendBody } from '../reply.ts';

const FILES = {
  page: { file: 'page.html', type: 'text/html; charset=utf-8' },
  js: { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  css: { file: 'console.css', type: 'text/css; charset=utf-8' },
  // The page names it: a browser would otherwise ask for /favicon.ico, refused 401 behind the token.
  icon: { file: 'icon.svg', type: 'image/svg+xml' },
} as const;

export type AssetName = keyof typeof FILES;

/** The console's files, read now. */
export function consoleAssets(): { send(res: ServerResponse, name: AssetName): void } {
  const bodies = new Map<AssetName, Buffer>();
  for (const [name, { file }] of Object.entries(FILES)) {
    bodies.set(name as AssetName, readFileSync(path.join(import.meta.dirname, file)));
  }
  return {
    send(res, name) {
      sendBody(res, 200, FILES[name].type, bodies.get(name) as Buffer);
    },
  };
}
