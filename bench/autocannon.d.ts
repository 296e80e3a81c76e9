/**
 * The part of autocannon 9's programmatic API the benchmark uses (the
 * package ships no types).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export type Options = {
    /** Several URLs: connection i goes to url[i % length] for the whole run. */
    url: string | string[];
    method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    /** Send this many requests in all, then stop (instead of a duration). */
    amount?: number;
    pipelining?: number;
    timeout?: number;
    title?: string;
    /** Per-request hooks; setupRequest may return a changed request (headers, body). */
    requests?: Array<{
      method?: 'GET' | 'POST';
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (request: Record<string, unknown>) => Record<string, unknown>;
    }>;
  };

  export type Stats = {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p99: number;
  };

  export type Result = {
    title?: string;
    duration: number;
    errors: number;
    timeouts: number;
    resets: number;
    non2xx: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Stats;
    requests: Stats & { sent: number };
    throughput: Stats;
  };

  /** A running load: emits 'response' (client, statusCode, bytes, responseTimeMs) and resolves with the result. */
  export type Instance = EventEmitter & PromiseLike<Result> & { stop(): void };

  export default function autocannon(options: Options): Instance;
}
