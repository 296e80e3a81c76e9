/**
 * Attack: a lying transform process stops reading its commands and reports two versions of a
 * module in turn (within the report budget). Each report is a version new to the server, which
 * hands its text to every process, the liar too: the frames piled up in the server's memory
 * behind a pipe nobody reads. And a report listing one file 64 times had the server read and
 * hand on 64 copies of it.
 */
import { closeSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createLastGoodSources } from '../engine/sandbox/last-good-sources.ts';
import { realRootOf, signatureOf } from '../engine/sandbox/module-files.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { waitFor } from './helpers/runtime.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const LIAR = fileURLToPath(new URL('./fixtures/sandbox/report-liar.mjs', import.meta.url));
const SETTINGS = SANDBOX_SETTINGS;
const MB = 1024 * 1024;

describe('a process that reads no commands and floods version reports', () => {
  const temp = tempDir();
  const file = path.join(temp.dir, 'm.js');
  const supervisors: TransformSupervisor[] = [];

  beforeAll(() => {
    // An honest module with tables in it: 64 files of 16 KiB.
    writeFileSync(
      file,
      `export default () => ({ message: ${JSON.stringify('x'.repeat(16 * 1024))} });\n`,
    );
    for (let i = 1; i < 64; i++)
      writeFileSync(
        path.join(temp.dir, `t${i}.js`),
        `export const t = "${'x'.repeat(16 * 1024)}";\n`,
      );
  });
  const logFds: number[] = [];
  afterAll(async () => {
    await Promise.all(supervisors.map((s) => s.close()));
    for (const fd of logFds) closeSync(fd);
    temp.cleanup();
  });

  const flood = async (files: string[]): Promise<number> => {
    const logFile = path.join(temp.dir, `service-${supervisors.length}.log`);
    const fd = openSync(logFile, 'a');
    logFds.push(fd);
    const supervisor = createSupervisor(
      [{ key: 'm', mappingId: 'm', root: temp.dir, file }],
      SETTINGS,
      createLogger('info', fd),
      { entry: LIAR },
    );
    supervisors.push(supervisor);
    await supervisor.start();
    const before = process.memoryUsage().arrayBuffers;
    // 50 reports: under the budget of 100 + 20 per module a minute.
    await supervisor.call('m', { attack: 'stop-reading-and-report', key: 'm', files, reports: 50 });
    // The process's last message, after its reports: the server has taken every one of them.
    await waitFor('the reports to be read', () =>
      readLogLines(logFile).some((line) => String(line['msg']).includes('reports sent')),
    );
    return (process.memoryUsage().arrayBuffers - before) / MB;
  };

  it('64 files of the root in turn: the server does not hold what the process does not read', async () => {
    const files = [
      file,
      ...Array.from({ length: 63 }, (_, i) => path.join(temp.dir, `t${i + 1}.js`)),
    ];
    expect(await flood(files)).toBeLessThan(8);
  });
});

describe('a report that lists one file many times', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());

  it('is not kept, nor handed on: no graph a process compiled lists a file twice', () => {
    const file = path.join(temp.dir, 'm.js');
    writeFileSync(file, 'export default () => ({ message: "v1" });\n');
    const sources = createLastGoodSources([{ key: 'm', realRoot: realRootOf(temp.dir) }]);
    const signature = signatureOf(file);
    const listed = Array.from({ length: 64 }, () => ({ file, signature }));
    expect(sources.record({ key: 'm', files: listed })).toBeUndefined();
    expect(sources.sources()).toEqual([]);
    // The same file once is a version: kept, and handed on.
    expect(sources.record({ key: 'm', files: [{ file, signature }] })).toHaveLength(1);
  });
});

describe('a report naming files of more source than a module may have', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());

  it('is not kept: every restart would send it to the new process in one frame', () => {
    const files = ['a.js', 'b.js', 'c.js'].map((name) => {
      const file = path.join(temp.dir, name);
      writeFileSync(file, `/*${'x'.repeat(MB)}*/\n`);
      return { file, signature: signatureOf(file) };
    });
    const sources = createLastGoodSources([{ key: 'm', realRoot: realRootOf(temp.dir) }]);
    expect(sources.record({ key: 'm', files })).toBeUndefined();
    expect(sources.sources()).toEqual([]);
    // One of them is within the limit: kept.
    expect(sources.record({ key: 'm', files: files.slice(0, 1) })).toHaveLength(1);
  });
});
