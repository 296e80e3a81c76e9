/**
 * The agent the bench's hookgate targets run their turns on: an HTTP runner
 * endpoint on 127.0.0.1 that reads the run and answers at once: a turn with
 * `{"reply": "ok"}`, a heartbeat with the default ack token (nothing needs
 * attention, as a real agent mostly answers), so a row with the runtime on
 * measures hookgate's own work per run. It runs in the bench's own process,
 * beside the load generator.
 */
import { createServer, type Server } from 'node:http';

const REPLY = JSON.stringify({ reply: 'ok' });
const ACK = JSON.stringify({ reply: 'HEARTBEAT_OK' });

/** A started agent: its run URL, how many runs it answered, and its stop. */
export type BenchAgent = { url: string; runs(): number; stop(): Promise<void> };

/** Start the agent on a free port. */
export async function startBenchAgent(): Promise<BenchAgent> {
  let runs = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      runs++;
      // The run's kind is near the start of the body; no need to parse a heartbeat's events.
      const heartbeat = Buffer.concat(chunks).subarray(0, 64).includes('"heartbeat"');
      res.writeHead(200, { 'content-type': 'application/json' }).end(heartbeat ? ACK : REPLY);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/run`,
    runs: () => runs,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
