/**
 * The config file the reload tests start from and edit: hooks on a free
 * port with the test token, one mapped wake (`ci`) whose text says which
 * version of the file is running, the heartbeat off, data in ./data.
 */
import { TOKEN } from './hookgate.ts';

/** A config whose `ci` mapping wakes with `text` (a template), then `extra` YAML lines. */
export function ciWakeConfig(text: string, extra = ''): string {
  return `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${TOKEN}
  mappings:
    - id: ci
      match: { path: ci }
      action: wake
      text: "${text}"
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
${extra}`;
}
