/**
 * Raw HTTP requests for cases fetch cannot express: lying Content-Length,
 * chunked uploads without end, slow bodies, invalid bytes.
 */
import { request } from 'node:http';

export type RawResponse = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
};

/** Send a POST whose body is written chunk by chunk, with optional pauses; resolves on the response. */
export function rawPost(
  url: string,
  options: {
    headers?: Record<string, string | number>;
    chunks?: Array<Buffer | string | { pauseMs: number }>;
    end?: boolean;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: options.headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(parts).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    // The server may answer and close before the upload ends.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    (async () => {
      for (const chunk of options.chunks ?? []) {
        if (typeof chunk === 'object' && 'pauseMs' in chunk) {
          await new Promise((r) => setTimeout(r, chunk.pauseMs));
        } else if (!req.destroyed) {
          req.write(chunk);
        }
      }
      if (options.end !== false && !req.destroyed) req.end();
    })().catch(reject);
  });
}
