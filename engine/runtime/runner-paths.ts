/**
 * Where a `command` runner's argv[0] and an agent's workspace are on disk,
 * resolved exactly as the runtime starts them, and whether they are usable:
 * `hookgate check` refuses a missing or non-executable command or workspace,
 * `serve` warns (the file may be installed after the start).
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../schemas/config.ts';

/** A problem with its config path, e.g. `agents.list.1.runner.argv.0`. */
export type PathProblem = { path: string; message: string };

/** argv[0] as the runtime spawns it: "./x" and "../x" are relative to the config file's directory. */
export function commandFile(file: string, baseDir: string): string {
  return file.startsWith('./') || file.startsWith('../') ? path.resolve(baseDir, file) : file;
}

/** The agent's workspace: relative to the config file's directory, default that directory. */
export function workspaceDir(workspace: string | undefined, baseDir: string): string {
  return path.resolve(baseDir, workspace || '.');
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a command cannot be started, or null. Like spawn: a name with a slash is a path (from the
 * workspace, the runner's cwd, when relative); a bare name is looked up on PATH.
 */
export function commandProblem(
  file: string,
  baseDir: string,
  workspace: string,
  pathEnv: string | undefined,
): string | null {
  const command = commandFile(file, baseDir);
  if (command.includes('/')) {
    const resolved = path.resolve(workspace, command);
    if (isExecutableFile(resolved)) return null;
    let exists = true;
    try {
      statSync(resolved);
    } catch {
      exists = false;
    }
    return `command "${file}" (${resolved}) ${exists ? 'is not an executable file' : 'does not exist'}`;
  }
  const dirs = (pathEnv ?? '').split(path.delimiter).filter((dir) => dir !== '');
  if (dirs.some((dir) => isExecutableFile(path.join(dir, command)))) return null;
  return `command "${file}" is not an executable file on PATH`;
}

function workspaceProblem(dir: string): string | null {
  try {
    if (!statSync(dir).isDirectory()) return `workspace ${dir} is not a directory`;
    accessSync(dir, constants.X_OK);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? `workspace ${dir} does not exist`
      : `workspace ${dir} cannot be entered (${code ?? 'error'})`;
  }
}

type AgentEntry = Config['agents']['list'][number];

/** Every missing or unusable runner command and workspace of the configured agents. */
export function agentPathProblems(
  config: Config,
  baseDir: string,
  env: NodeJS.ProcessEnv,
): PathProblem[] {
  const defaults = config.agents.defaults.runner;
  const list: AgentEntry[] = config.agents.list.length > 0 ? config.agents.list : [{ id: 'main' }];
  const problems = new Map<string, PathProblem>();
  list.forEach((agent, i) => {
    const at = `agents.list.${i}`;
    const workspace = workspaceDir(agent.workspace, baseDir);
    const bad = agent.workspace === undefined ? null : workspaceProblem(workspace);
    if (bad) problems.set(`${at}.workspace`, { path: `${at}.workspace`, message: bad });
    const own = agent.runner !== undefined;
    const runner = agent.runner ?? defaults;
    const file = runner?.kind === 'command' ? runner.argv?.[0] : undefined;
    if (file === undefined) return;
    const where = own ? `${at}.runner.argv.0` : 'agents.defaults.runner.argv.0';
    const problem = bad ? null : commandProblem(file, baseDir, workspace, env['PATH']);
    if (problem && !problems.has(where)) problems.set(where, { path: where, message: problem });
  });
  return [...problems.values()];
}
