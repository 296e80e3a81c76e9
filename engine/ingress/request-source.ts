/**
 * The request as the stages read it: request line, headers, client address
 * and a bounded body read. The HTTP server and `hookgate test` each provide
 * one, so both run the very same stages.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { type BodyLimits, readBody } from '../body.ts';
import type { HeaderValues } from '../auth/verifier.ts';

export type RequestSource = {
  method: string;
  /** The HTTP version as sent (`1.1`); absent when the request came over no connection. */
  httpVersion?: string;
  /** Path and query as sent. */
  url: string;
  /** Lower-cased names; repeated custom headers joined by Node with ", ". */
  headers: IncomingHttpHeaders;
  /** Names and values as sent, every occurrence (for carriers that must appear once). */
  rawHeaders: readonly string[];
  remoteAddress: string | undefined;
  /** Read the whole body under a size and a time limit. */
  readBody(limits: BodyLimits): Promise<Buffer>;
};

/** The request source of a node:http request (a class: no closures built per request). */
class HttpSource implements RequestSource {
  readonly method: string;
  readonly httpVersion: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  readonly remoteAddress: string | undefined;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.method = req.method ?? 'GET';
    this.httpVersion = req.httpVersion;
    this.url = req.url ?? '/';
    this.headers = req.headers;
    this.rawHeaders = req.rawHeaders;
    this.remoteAddress = req.socket.remoteAddress;
    this.#req = req;
    this.#res = res;
  }

  // `Expect: 100-continue` is answered only when the body is read: after authentication, the
  // route, its content type (on token routes) and a declared length that fits, so a sender
  // refused for any of them uploads nothing.
  readBody(limits: BodyLimits): Promise<Buffer> {
    return readBody(this.#req, limits, undefined, this.#res);
  }
}

/** The request source of a node:http request. */
export function httpSource(req: IncomingMessage, res: ServerResponse): RequestSource {
  return new HttpSource(req, res);
}

/** Every occurrence of each header by lower-case name, read from the raw list once, on first use. */
export function headerValues(rawHeaders: readonly string[]): HeaderValues {
  let byName: Map<string, string[]> | undefined;
  return (name) => {
    if (!byName) {
      byName = new Map();
      for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
        const key = (rawHeaders[i] as string).toLowerCase();
        const list = byName.get(key);
        if (list) list.push(rawHeaders[i + 1] as string);
        else byName.set(key, [rawHeaders[i + 1] as string]);
      }
    }
    return byName.get(name) ?? NONE;
  };
}

const NONE: readonly string[] = Object.freeze([]);
