/**
 * Resolving an agent's run settings from the config: its runner (its own or
 * the defaults'), workspace, default model and default timeout.
 */
import type { Config } from '../../schemas/config.ts';
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

function providersFrom(providers: Config['providers']): Record<string, Provider> {
  const out: Record<string, Provider> = {};
  for (const [name, provider] of Object.entries(providers)) {
    const apiKey = provider.apiKeyEnv ? process.env[provider.apiKeyEnv] : undefined;
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
  const apiKey = runner.apiKeyEnv ? process.env[runner.apiKeyEnv] : undefined;
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
  for (const agent of list) {
    const workspace = workspaceDir('workspace' in agent ? agent.workspace : undefined, baseDir);
    const model = ('model' in agent && agent.model) || defaults.model;
    const runner = ('runner' in agent && agent.runner) || defaults.runner;
    agents.set(agent.id, {
      id: agent.id,
      runner: runner ? buildRunner(runner, workspace, baseDir, model, config) : undefined,
      workspace,
      model,
      timeoutSeconds:
        ('timeoutSeconds' in agent && agent.timeoutSeconds) || defaults.timeoutSeconds,
    });
  }
  return agents;
}
