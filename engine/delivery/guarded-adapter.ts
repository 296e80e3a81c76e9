/**
 * An adapter as delivery uses it: its recipient check starts with what every
 * channel refuses (recipient-form.ts), and a send that throws (a defect, or
 * input no check foresaw) is a failed part, not a crash of the run that
 * would leave it and its session's later runs waiting for ever.
 */
import { errorKind } from '../observe/error-text.ts';
import type { ChannelAdapter, SendResult } from './adapter.ts';
import { recipientFormProblem } from './recipient-form.ts';

export function guardedAdapter(adapter: ChannelAdapter): ChannelAdapter {
  return {
    ...adapter,
    checkRecipient: (to) => recipientFormProblem(to) ?? adapter.checkRecipient(to),
    async send(to, text, signal): Promise<SendResult> {
      try {
        return await adapter.send(to, text, signal);
      } catch (err) {
        const kind = errorKind(err);
        return {
          status: 'failed',
          reason: `${adapter.id} could not send this part (hookgate error: ${kind}); not retried`,
        };
      }
    },
  };
}
