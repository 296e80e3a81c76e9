/**
 * The built-in presets by name, as enabled with `hooks.presets`, and how the
 * deployment's settings adjust them. A preset is one or more mappings, all on
 * the path named after it. The signed presets (github, stripe, slack) carry
 * the provider's signature scheme with the secrets of `hooks.<name>.auth`, and
 * their agent mappings take `hooks.<name>`'s agent, model, thinking, delivery
 * and safety settings.
 */
import type { HooksConfig } from '../schemas/config.ts';
import type { Mapping } from '../schemas/mapping.ts';
import { githubMappings } from './github.ts';
import { gmailPreset } from './gmail.ts';
import { SLACK_REPLY_TO, slackMappings } from './slack.ts';
import { stripeMappings } from './stripe.ts';

/** A preset: its mappings for the deployment's settings, in matching order. */
export type Preset = (hooks: HooksConfig) => Mapping[];

type SignedName = 'github' | 'stripe' | 'slack';

/** Where each signed preset's secret is found on the provider's side (for boot errors and docs). */
export const SECRET_SOURCES: Readonly<Record<SignedName, string>> = Object.freeze({
  github:
    "the Secret you type on the repository's (or organisation's) Settings > Webhooks page; GitHub never shows it again",
  stripe:
    'the Signing secret (whsec_...) of the endpoint on the Stripe Dashboard, Developers > Webhooks, "Reveal"',
  slack: 'the Signing Secret on your Slack app\'s "Basic Information" page (api.slack.com/apps)',
});

/** The signed presets by name: each reads its settings from `hooks.<name>`. */
export const SIGNED_PRESET_NAMES = Object.freeze(Object.keys(SECRET_SOURCES) as SignedName[]);

const SIGNED: ReadonlySet<string> = new Set(SIGNED_PRESET_NAMES);

/** Agent settings a signed preset's agent mappings take from `hooks.<name>`. */
const AGENT_SETTINGS = [
  'agentId',
  'model',
  'thinking',
  'deliver',
  'channel',
  'to',
  'allowUnsafeExternalContent',
] as const;

/**
 * A signed preset: the scheme and secrets on every mapping, the agent settings on agent ones.
 * `replyTo` (a provider that is also a delivery channel): per mapping id, the template of the
 * conversation a reply goes back to when the preset delivers to that channel with no `to`.
 */
function signed(
  name: SignedName,
  mappings: readonly Mapping[],
  replyTo: Readonly<Record<string, string>> = {},
): Preset {
  return (hooks) => {
    const settings = hooks[name] ?? {};
    const auth = { scheme: name, ...settings.auth } as const;
    const overrides: Partial<Mapping> = {};
    for (const key of AGENT_SETTINGS) {
      if (settings[key] !== undefined) Object.assign(overrides, { [key]: settings[key] });
    }
    const replies = settings.channel === name && settings.to === undefined;
    return mappings.map((mapping) => {
      if (mapping.action === 'ignore') return { ...mapping, auth };
      const to = replies && mapping.id !== undefined ? replyTo[mapping.id] : undefined;
      const templates = to ? { templates: { ...mapping.templates, to } } : {};
      return { ...mapping, ...overrides, auth, ...templates };
    });
  };
}

/** Presets by the name used in `hooks.presets`. */
export const PRESETS: Readonly<Record<string, Preset>> = Object.freeze({
  gmail: (hooks) => {
    const { allowUnsafeExternalContent, model, thinking } = hooks.gmail;
    return [
      {
        ...gmailPreset,
        ...(allowUnsafeExternalContent !== undefined && { allowUnsafeExternalContent }),
        ...(model !== undefined && { model }),
        ...(thinking !== undefined && { thinking }),
      },
    ];
  },
  github: signed('github', githubMappings),
  stripe: signed('stripe', stripeMappings),
  // Replies go back where the message came from, unless the operator names a recipient.
  slack: signed('slack', slackMappings, SLACK_REPLY_TO),
});

/** Names of the built-in presets. */
export const PRESET_NAMES = Object.freeze(Object.keys(PRESETS));

/** Why an enabled preset cannot run as configured (a signed one without a secret), or undefined. */
export function presetProblem(
  name: string,
  hooks: HooksConfig,
): { at: string; message: string } | undefined {
  if (!SIGNED.has(name)) return undefined;
  const auth = hooks[name as SignedName]?.auth;
  if (auth?.secret !== undefined || auth?.secrets !== undefined) return undefined;
  return {
    at: `hooks.${name}.auth.secret`,
    message: `the ${name} preset verifies the provider's signatures and needs a secret (or secrets: [new, old]): ${SECRET_SOURCES[name as SignedName]}`,
  };
}
