/**
 * Attack: an HTTPS endpoint (a channel's API, a runner) that answers over HTTP/2 with DATA
 * frames of padding alone, without end. The bound on an answer's bytes on the wire counts
 * HTTP/1.1 connections only; undici offered HTTP/2 by default, and such a peer was read until
 * the call's timeout (about a gigabyte in 3 s on loopback), none of it counted as body. Outbound
 * calls now offer HTTP/1.1 alone, where every byte of an answer is bounded: an endpoint that
 * offers both is spoken to in HTTP/1.1.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboundCall } from '../engine/outbound/http-client.ts';
import { tempDir } from './helpers/process.ts';

// The certificate is made with the machine's openssl; without it the test is skipped.
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
if (!hasOpenssl)
  console.warn('skipping the HTTP/2 padding attack: no openssl to make a certificate');

let server: Http2SecureServer;
let url = '';
const versions: string[] = [];
let temp: ReturnType<typeof tempDir> | undefined;
let restoreTls: string | undefined;

describe.skipIf(!hasOpenssl)('outbound calls over HTTPS', () => {
  beforeAll(async () => {
    temp = tempDir('hookgate-h2-');
    const key = path.join(temp.dir, 'key.pem');
    const cert = path.join(temp.dir, 'cert.pem');
    execFileSync('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-subj', '/CN=127.0.0.1', '-days', '1', '-keyout', key, '-out', cert],
    ]);
    // A self-signed certificate: this test's process only.
    restoreTls = process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
    process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0';
    // Offers HTTP/2 first, HTTP/1.1 too; over HTTP/2 it would pad without end.
    server = createSecureServer(
      { key: readFileSync(key), cert: readFileSync(cert), allowHTTP1: true },
      (req, res) => {
        versions.push(req.httpVersion);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/post`;
  });

  afterAll(async () => {
    if (restoreTls === undefined) delete process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
    else process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = restoreTls;
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    temp?.cleanup();
  });

  it('an HTTPS endpoint that offers HTTP/2 is spoken to in HTTP/1.1, where its answer is bounded on the wire', async () => {
    const result = await outboundCall(url, {
      headers: { 'content-type': 'application/json' },
      body: '{}',
      timeoutMs: 10_000,
      maxBytes: 1024,
    });
    expect(result).toMatchObject({ kind: 'answer', status: 200, text: '{"ok":true}' });
    expect(versions).toEqual(['1.1']);
  });
});
