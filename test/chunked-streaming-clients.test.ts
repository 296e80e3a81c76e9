/**
 * An honest streaming client's chunked body is not refused by the bound on small pieces:
 * Python `requests` posting a generator of json.JSONEncoder().iterencode(payload) (the
 * standard library's incremental encoder) sends each fragment as a chunk of its own, a JSON
 * token each, up to the body limit (the bound over the whole body grows with it). Skipped,
 * saying so, where Python's requests is not installed.
 */
import { execFile, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

const hasRequests =
  spawnSync('python3', ['-c', 'import requests'], { stdio: 'ignore' }).status === 0;
if (!hasRequests)
  console.warn('chunked-streaming-clients: skipped, python3 with requests is not installed');

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    hooks: {
      mappings: [
        { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'ci {{payload.build}}' },
      ],
    },
  });
});
afterAll(async () => server?.stop());

const PY = `
import json, sys, requests
url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
payload = {"build": 42, "tests": [{"id": i, "ok": True, "ms": i % 97} for i in range(n)]}
body = (s.encode() for s in json.JSONEncoder().iterencode(payload))
r = requests.post(url + "/hooks/ci", data=body,
                  headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
print(r.status_code, len(json.dumps(payload)), r.text[:100])
`;

function py(n: number): Promise<string> {
  return new Promise((resolve) =>
    execFile('python3', ['-c', PY, server.url, TOKEN, String(n)], (_e, so, se) => resolve(so + se)),
  );
}

// 7000: 250 KB, about 100,000 tokens, under the 256 KiB body limit.
it.skipIf(!hasRequests).each([100, 400, 800, 5000, 7000])(
  'python requests + iterencode, %i test results: accepted',
  async (n) => {
    expect(await py(n)).toMatch(/^200 /);
  },
  30_000,
);
