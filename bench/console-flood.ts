/**
 * `node bench/console-flood.ts [--rate N]`: how long the console's tab takes to answer while
 * a flood of refused requests (wrong tokens, N a second, default 1,100, from a child process
 * over keep-alive connections) streams into its list. hookgate and its admin listener run
 * in-process (as the tests assemble them), the console in Debian's Chromium; the tab reads a
 * request's detail 24 times, a quarter of a second apart, idle and then under the flood.
 * Reported: the tab's read times (median, 90th percentile, max) and the same read from Node.
 * 127.0.0.1 only; about 30 s.
 */
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { ADMIN_TOKEN, startAdminStack } from '../test/helpers/admin.ts';
import { launchChromium } from '../test/helpers/console-browser.ts';

const PROBES = 24;

// The child: refused requests at a steady rate until it is killed.
if (process.argv[2] === '--flood') {
  const [url, rate] = [process.argv[3] as string, Number(process.argv[4])];
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const headers = { authorization: 'Bearer wrong', 'content-type': 'application/json' };
  let sent = 0;
  let answered = 0;
  const started = Date.now();
  setInterval(() => {
    const due = Math.floor(((Date.now() - started) / 1000) * rate);
    for (; sent < due && sent - answered < 400; sent++) {
      const req = request(url, { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => answered++);
      });
      req.on('error', () => undefined);
      req.end('{}');
    }
  }, 5);
} else {
  const at = process.argv.indexOf('--rate');
  const rate = at > 0 ? Number(process.argv[at + 1]) : 1100;
  const stack = await startAdminStack({});
  expect200(await stack.post('wake', { text: 'a real request' }));
  const id = stack.journal.list()[0]?.id as string;
  const browser = await launchChromium();
  const page = await browser.newPage();
  await page.goto(`${stack.admin.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
  await page.locator('#live.on').waitFor();

  async function probe(label: string): Promise<void> {
    const tab: number[] = [];
    const node: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      tab.push(
        await page.evaluate(async (path) => {
          const token = sessionStorage.getItem('hookgate-admin-token');
          const started = performance.now();
          await (await fetch(path, { headers: { authorization: `Bearer ${token}` } })).json();
          return performance.now() - started;
        }, `/api/requests/${id}`),
      );
      const started = performance.now();
      await (await stack.adminFetch(`/api/requests/${id}`)).json();
      node.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    console.log(`${label}: tab ${spread(tab)}; node ${spread(node)}`);
  }

  await probe('idle');
  const flood = fork(import.meta.filename, [
    '--flood',
    `${stack.hooksUrl}${stack.hooksPath}/wake`,
    String(rate),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await probe(`${rate} refused requests a second`);
  flood.kill();
  await browser.close();
  await stack.stop();
}

function spread(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.floor(sorted.length * q)] as number).toFixed(1);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(0.999)} ms`;
}

function expect200(res: Response): void {
  if (res.status !== 200) throw new Error(`the real request was answered ${res.status}`);
}
