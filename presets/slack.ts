/**
 * The `slack` preset: a Slack app's Events API, slash commands and
 * interactivity, all posted to `<hooks_path>/slack` and signed with
 * `X-Slack-Signature`. One session per channel (`hook:slack:<channel id>`).
 *
 * Events API (`event_callback`): `message` and `app_mention` wake an agent.
 * Messages from bots (`bot_id`) and messages with a subtype other than
 * `file_share` or `thread_broadcast` (edits, deletions, joins, bot_message)
 * are ignored, so an agent replying in Slack does not wake itself; so is a
 * `message` that mentions the app, whose `app_mention` event wakes it once.
 * Slash commands (form fields) and interactivity (`block_actions`,
 * `view_submission`, shortcuts; the `payload` form field's JSON is the body)
 * wake an agent. Everything else is answered 200 and ignored. The
 * `url_verification` and `ssl_check` handshakes are answered before mappings.
 */
import type { Mapping } from '../schemas/mapping.ts';

type Condition = Record<string, unknown>;

const v = (path: string) => ({ var: path });
const line = (path: string, max = 120) => `{{truncate (oneLine ${path}) ${max}}}`;
const fact = (label: string, path: string) =>
  `{{#if ${path}}}${label}: ${line(path, 300)}\n{{/if}}`;
const excerpt = (path: string) => `{{#if ${path}}}\n{{truncate ${path} 4000}}\n{{/if}}`;
const session = (...paths: string[]) =>
  `hook:slack:{{keySegment ${paths.reduceRight((inner, path) => `(default ${path} ${inner})`, '"workspace"')}}}`;

const isEvent = { '==': [v('payload.type'), 'event_callback'] };

// Loops and duplicates: bot messages, housekeeping subtypes, messages that also come as app_mention.
const loopOrDuplicate = {
  or: [
    { '!!': [v('payload.event.bot_id')] },
    {
      and: [
        { '!!': [v('payload.event.subtype')] },
        { '!': [{ in: [v('payload.event.subtype'), ['file_share', 'thread_broadcast']] }] },
      ],
    },
    {
      and: [
        { '==': [v('payload.event.type'), 'message'] },
        { '!!': [v('payload.authorizations.0.user_id')] },
        {
          in: [
            { cat: ['<@', v('payload.authorizations.0.user_id'), '>'] },
            v('payload.event.text'),
          ],
        },
      ],
    },
  ],
};

function agent(id: string, when: Condition, message: string[], sessionKey: string): Mapping {
  return {
    id,
    match: { path: 'slack', when },
    action: 'agent',
    name: 'Slack',
    label: 'Slack',
    wakeMode: 'now',
    templates: { message: message.join(''), sessionKey },
  };
}

const INTERACTIONS = [
  'block_actions',
  'view_submission',
  'shortcut',
  'message_action',
  'interactive_message',
];

const ACTIONS =
  '{{#if payload.actions.length}}Actions: {{#each payload.actions}}{{#if @index}}, {{/if}}{{truncate (oneLine (default action_id name)) 100}}{{#if value}}={{truncate (oneLine value) 200}}{{/if}}{{#if selected_option.value}}={{truncate (oneLine selected_option.value) 200}}{{/if}}{{/each}}\n{{/if}}';

/**
 * Where each agent mapping's reply goes back to when the preset delivers to Slack and the
 * operator names no recipient: the conversation the message, command or interaction came from
 * (an interaction without one, a modal say, to its user), and for a message in a thread, that
 * thread (`<channel>/<thread ts>`, as the slack channel reads it).
 */
export const SLACK_REPLY_TO: Readonly<Record<string, string>> = Object.freeze({
  'slack-events':
    '{{payload.event.channel}}{{#if payload.event.thread_ts}}/{{payload.event.thread_ts}}{{/if}}',
  // A command typed in a direct message (maybe between two people, where the app cannot post) is
  // answered in the app's own conversation with its user.
  'slack-command':
    '{{#if (eq payload.channel_name "directmessage")}}{{payload.user_id}}{{else}}{{payload.channel_id}}{{/if}}',
  'slack-interaction': '{{default payload.channel.id payload.user.id}}',
});

/** The preset's mappings, in matching order. */
export const slackMappings: readonly Mapping[] = Object.freeze([
  {
    id: 'slack-bot',
    match: { path: 'slack', when: { and: [isEvent, loopOrDuplicate] } },
    action: 'ignore',
  },
  agent(
    'slack-events',
    { and: [isEvent, { in: [v('payload.event.type'), ['message', 'app_mention']] }] },
    [
      `Slack {{#if (eq payload.event.type "app_mention")}}mention{{else}}message{{/if}} from ${line('payload.event.user', 40)} in ${line('payload.event.channel', 40)}: ${line('payload.event.text')}\n`,
      fact('Channel', 'payload.event.channel'),
      fact('Channel type', 'payload.event.channel_type'),
      fact('User', 'payload.event.user'),
      fact('Thread', 'payload.event.thread_ts'),
      fact('Message ts', 'payload.event.ts'),
      fact('Team', 'payload.team_id'),
      fact('Event', 'payload.event_id'),
      excerpt('payload.event.text'),
    ],
    session('payload.event.channel'),
  ),
  agent(
    'slack-command',
    { and: [{ '!!': [v('payload.command')] }, { '!!': [v('payload.response_url')] }] },
    [
      `Slack ${line('payload.command', 40)} from @${line('payload.user_name', 40)} in #${line('payload.channel_name', 60)}: ${line('payload.text')}\n`,
      fact('Command', 'payload.command'),
      fact('Text', 'payload.text'),
      fact('User', 'payload.user_name'),
      fact('User id', 'payload.user_id'),
      fact('Channel', 'payload.channel_name'),
      fact('Channel id', 'payload.channel_id'),
      fact('Team', 'payload.team_domain'),
      fact('Response URL', 'payload.response_url'),
    ],
    session('payload.channel_id'),
  ),
  agent(
    'slack-interaction',
    { in: [v('payload.type'), INTERACTIONS] },
    [
      `Slack ${line('payload.type', 40)} by @${line('(default payload.user.username payload.user.name)', 40)}{{#if payload.channel.name}} in #${line('payload.channel.name', 60)}{{/if}}: ${line('(default payload.actions.[0].action_id (default payload.callback_id payload.view.callback_id))', 100)}\n`,
      fact('Type', 'payload.type'),
      fact('User', '(default payload.user.username payload.user.name)'),
      fact('User id', 'payload.user.id'),
      fact('Channel', 'payload.channel.name'),
      fact('Channel id', 'payload.channel.id'),
      fact('Callback', '(default payload.callback_id payload.view.callback_id)'),
      ACTIONS,
      fact('Response URL', 'payload.response_url'),
      '{{#if payload.view.state.values}}Values: {{truncate (json payload.view.state.values) 2000}}\n{{/if}}',
    ],
    session('payload.channel.id', 'payload.user.id'),
  ),
  // Other event types, interactions and bodies: 200, nothing stored.
  { id: 'slack-other', match: { path: 'slack' }, action: 'ignore' },
]);
