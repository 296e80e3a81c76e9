/**
 * Resolving an agent's run settings from the config: its runner (its own or
 * the defaults'), workspace, default model and default timeout.
 */
import type { Config } from '../../schemas/config.ts';
import { isSendableToken } from '../../schemas/credentials.ts';
import { ConfigError } from '../config.ts';
import { commandFile, workspaceDir } from './runner-paths.ts';
import { createCommandRunner } from './runners/command.ts';
import { createHttpRunner } from './runners/http.ts';
import { createOpenAiRunner, type Provider } from './runners/openai.ts';
import type { Runner } from './runners/runner.ts';

export type AgentSettings = {
  id: string;
  /** Undefined when neither the agent nor agents.defaults configures a runner. */
  runner: Runner | undefined;
  workspace: string;
  model: string | undefined;
  timeoutSeconds: number;
};

type RunnerConfig = NonNullable<Config['agents']['defaults']['runner']>;

/**
 * The key the variable `name` holds, sent as `Authorization: Bearer <key>`: one that cannot be
 * sent (a line break a CRLF env file left, a space) stops the load, naming the setting and the
 * variable, never the value; unset or empty, no key.
 */
function apiKeyFrom(name: string | undefined, at: string): string | undefined {
  const key = name ? process.env[name] : undefined;
  if (!key) return undefined;
  if (!isSendableToken(key)) {
    throw new ConfigError(
      `${at}.apiKeyEnv`,
      `the value of ${name} must be visible ASCII characters without spaces: it is sent in an HTTP header`,
    );
  }
  return key;
}

function providersFrom(providers: Config['providers']): Record<string, Provider> {
  const out: Record<string, Provider> = {};
  for (const [name, provider] of Object.entries(providers)) {
    const apiKey = apiKeyFrom(provider.apiKeyEnv, `providers.${name}`);
    out[name] = {
      ...(provider.baseUrl && { baseUrl: provider.baseUrl }),
      ...(apiKey && { apiKey }),
      ...(provider.models && { models: provider.models }),
    };
  }
  return out;
}

function buildRunner(
  runner: RunnerConfig,
  at: string,
  workspace: string,
  baseDir: string,
  model: string | undefined,
  config: Config,
): Runner {
  const { maxReplyBytes } = config.runtime;
  if (runner.kind === 'command') {
    const [file, ...rest] = runner.argv as [string, ...string[]];
    // "./agent.sh" is relative to the config file's directory, not the workspace.
    return createCommandRunner({
      argv: [commandFile(file, baseDir), ...rest],
      cwd: workspace,
      maxReplyBytes,
      ...(runner.env && { env: runner.env }),
    });
  }
  if (runner.kind === 'http') {
    return createHttpRunner({
      url: runner.url as string,
      maxReplyBytes,
      ...(runner.headers && { headers: runner.headers }),
    });
  }
  const apiKey = apiKeyFrom(runner.apiKeyEnv, at);
  return createOpenAiRunner({
    ...(runner.baseUrl && { baseUrl: runner.baseUrl }),
    providers: providersFrom(config.providers),
    maxReplyBytes,
    ...(apiKey && { apiKey }),
    ...(runner.models && { models: runner.models }),
    ...(model && { defaultModel: model }),
    ...(runner.maxTokens !== undefined && { maxTokens: runner.maxTokens }),
  });
}

/** Resolve every configured agent (and the implicit default) once, at start. */
export function resolveAgents(
  config: Config,
  baseDir: string,
  defaultAgentId: string,
): Map<string, AgentSettings> {
  const defaults = config.agents.defaults;
  const list = config.agents.list.length > 0 ? config.agents.list : [{ id: defaultAgentId }];
  const agents = new Map<string, AgentSettings>();
  for (const [i, agent] of list.entries()) {
    const workspace = workspaceDir('workspace' in agent ? agent.workspace : undefined, baseDir);
    const model = ('model' in agent && agent.model) || defaults.model;
    const own = 'runner' in agent && agent.runner;
    const runner = own || defaults.runner;
    const at = own ? `agents.list.${i}.runner` : 'agents.defaults.runner';
    agents.set(agent.id, {
      id: agent.id,
      runner: runner ? buildRunner(runner, at, workspace, baseDir, model, config) : undefined,
      workspace,
      model,
      timeoutSeconds:
        ('timeoutSeconds' in agent && agent.timeoutSeconds) || defaults.timeoutSeconds,
    });
  }
  return agents;
}
