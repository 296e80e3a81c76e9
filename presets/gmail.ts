/**
 * The `gmail` preset: mail-notification payloads shaped like
 * `{"source":"gmail","messages":[{"id","from","subject","snippet","body"}]}`
 * posted to `<hooks_path>/gmail`. One agent run per message of the batch
 * (never only the first), each in its own session `hook:gmail:<message id>`
 * (a message without an id: the session of a run without a key),
 * wrapped as untrusted content labelled `Email`.
 * `hooks.gmail.allowUnsafeExternalContent`, `.model` and `.thinking` apply.
 */
import type { Mapping } from '../schemas/mapping.ts';

export const gmailPreset: Mapping = {
  id: 'gmail',
  match: { path: 'gmail' },
  action: 'agent',
  forEach: 'messages',
  name: 'Gmail',
  label: 'Email',
  wakeMode: 'now',
  deliver: true,
  // A message without an id (a forwarder's own shape) runs in the session a run without a key
  // gets, not refused: hooks.defaultSessionKey, else one of its own.
  sessionKeyWhenEmpty: 'default',
  templates: {
    sessionKey: 'hook:gmail:{{item.id}}',
    message: [
      'New email from {{default item.from "(unknown sender)"}}',
      'Subject: {{default item.subject "(no subject)"}}',
      '{{#if item.snippet}}',
      '{{item.snippet}}',
      '{{/if}}',
      '{{#if item.body}}',
      '',
      '{{item.body}}',
      '{{/if}}',
    ].join('\n'),
  },
};
