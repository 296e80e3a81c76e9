/**
 * The mailbox behind the Gmail stand-in: tests add messages from simple
 * fixtures, each addition advances the history id (with gaps, as Gmail's
 * do), and the mailbox renders history records and Message resources in
 * Gmail's documented wire shapes (`full` and `metadata`).
 */

/** A message as a test describes it. */
export type MailFixture = {
  from?: string;
  to?: string;
  subject?: string;
  /** The Date header as sent. */
  date?: string;
  text?: string;
  html?: string;
  /** Several text/html parts side by side in a multipart/mixed (a crafted message). */
  htmlParts?: string[];
  /** Gmail's snippet, when the one made from the text will not do. */
  snippet?: string;
  /** Defaults to INBOX and UNREAD. */
  labels?: string[];
  /** When Gmail accepted it (epoch ms); else a fixed date in 2025, a second per message. */
  receivedAtMs?: number;
  attachments?: { filename: string; mimeType?: string; size?: number }[];
};

type StoredMail = MailFixture & {
  id: string;
  threadId: string;
  historyId: bigint;
  internalDate: number;
  labels: string[];
};

type HistoryRecord = { id: bigint; mail: StoredMail };

type Part = {
  partId: string;
  mimeType: string;
  filename: string;
  headers: { name: string; value: string }[];
  body: { size: number; data?: string; attachmentId?: string };
  parts?: Part[];
};

/** The stand-in's mailbox. */
export type Mailbox = ReturnType<typeof createMailbox>;

/** A mailbox whose history starts at `startHistoryId`. */
export function createMailbox(startHistoryId = 1000n) {
  let historyId = startHistoryId;
  let expiredBefore = 0n;
  const messages = new Map<string, StoredMail>();
  const records: HistoryRecord[] = [];
  return {
    /** The mailbox's current history id. */
    historyId: () => historyId,
    /** Add a message; returns its id. */
    addMessage(fixture: MailFixture): string {
      // Gmail's ids increase with random gaps; 1 to 3 here.
      historyId += BigInt(1 + (records.length % 3));
      const id = (0x18c0000000 + records.length).toString(16);
      const mail: StoredMail = {
        ...fixture,
        id,
        threadId: id,
        historyId,
        internalDate: fixture.receivedAtMs ?? 1_760_000_000_000 + records.length * 1000,
        labels: fixture.labels ?? ['INBOX', 'UNREAD'],
      };
      messages.set(id, mail);
      records.push({ id: historyId, mail });
      return id;
    },
    /** Delete a message (its history record stays, as Gmail's do). */
    deleteMessage(id: string): void {
      messages.delete(id);
    },
    /** Every start history id older than the current one now answers 404. */
    expireHistory(): void {
      expiredBefore = historyId;
    },
    isExpired: (start: bigint) => start < expiredBefore,
    /** History records after `start`, with the label when one is given. */
    recordsAfter(start: bigint, labelId?: string): HistoryRecord[] {
      return records.filter((r) => r.id > start && (!labelId || r.mail.labels.includes(labelId)));
    },
    /** The newest message ids (with the label when one is given), newest first. */
    newest(labelId: string | undefined, max: number): string[] {
      return [...messages.values()]
        .filter((m) => !labelId || m.labels.includes(labelId))
        .reverse()
        .slice(0, max)
        .map((m) => m.id);
    },
    /** The Message resource, or undefined when there is no such message. */
    render(id: string, format: string, metadataHeaders: string[]): object | undefined {
      const mail = messages.get(id);
      if (!mail) return undefined;
      const payload = format === 'metadata' ? metadataPart(mail, metadataHeaders) : fullPart(mail);
      return {
        id: mail.id,
        threadId: mail.threadId,
        labelIds: mail.labels,
        snippet:
          mail.snippet ?? (mail.text ?? mail.html?.replace(/<[^>]*>/g, '') ?? '').slice(0, 100),
        historyId: String(mail.historyId),
        internalDate: String(mail.internalDate),
        sizeEstimate: (mail.text?.length ?? 0) + (mail.html?.length ?? 0) + 500,
        payload,
      };
    },
  };
}

/** A history record as history.list sends it. */
export function renderRecord(record: HistoryRecord): object {
  const message = { id: record.mail.id, threadId: record.mail.threadId };
  return {
    id: String(record.id),
    messages: [message],
    messagesAdded: [{ message: { ...message, labelIds: record.mail.labels } }],
  };
}

function topHeaders(mail: StoredMail): { name: string; value: string }[] {
  const headers: [string, string | undefined][] = [
    ['From', mail.from],
    ['To', mail.to],
    ['Subject', mail.subject],
    ['Date', mail.date],
    ['Message-ID', `<${mail.id}@stand-in.example>`],
  ];
  return headers.flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }]));
}

function metadataPart(mail: StoredMail, wanted: string[]): Part {
  const lower = wanted.map((name) => name.toLowerCase());
  const headers = topHeaders(mail).filter(
    (h) => lower.length === 0 || lower.includes(h.name.toLowerCase()),
  );
  return { partId: '', mimeType: rootType(mail), filename: '', headers, body: { size: 0 } };
}

function rootType(mail: StoredMail): string {
  if (mail.attachments?.length || mail.htmlParts) return 'multipart/mixed';
  if (mail.text !== undefined && mail.html !== undefined) return 'multipart/alternative';
  return mail.html !== undefined ? 'text/html' : 'text/plain';
}

function textPart(partId: string, mimeType: string, text: string): Part {
  const bytes = Buffer.from(text, 'utf8');
  return {
    partId,
    mimeType,
    filename: '',
    headers: [{ name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` }],
    body: { size: bytes.length, data: bytes.toString('base64url') },
  };
}

// The text of the mail: one part, or multipart/alternative (plain first, per RFC 2046).
function contentPart(mail: StoredMail, partId: string): Part {
  const prefix = partId === '' ? '' : `${partId}.`;
  if (mail.htmlParts !== undefined) {
    return {
      partId,
      mimeType: 'multipart/mixed',
      filename: '',
      headers: [{ name: 'Content-Type', value: 'multipart/mixed; boundary="parts"' }],
      body: { size: 0 },
      parts: mail.htmlParts.map((html, i) => textPart(`${prefix}${i}`, 'text/html', html)),
    };
  }
  if (mail.text !== undefined && mail.html !== undefined) {
    return {
      partId,
      mimeType: 'multipart/alternative',
      filename: '',
      headers: [{ name: 'Content-Type', value: 'multipart/alternative; boundary="alt"' }],
      body: { size: 0 },
      parts: [
        textPart(`${prefix}0`, 'text/plain', mail.text),
        textPart(`${prefix}1`, 'text/html', mail.html),
      ],
    };
  }
  if (mail.html !== undefined) return textPart(partId, 'text/html', mail.html);
  return textPart(partId, 'text/plain', mail.text ?? '');
}

function fullPart(mail: StoredMail): Part {
  const attachments = mail.attachments ?? [];
  if (attachments.length === 0) {
    const part = contentPart(mail, '');
    return { ...part, headers: [...topHeaders(mail), ...part.headers] };
  }
  return {
    partId: '',
    mimeType: 'multipart/mixed',
    filename: '',
    headers: [
      ...topHeaders(mail),
      { name: 'Content-Type', value: 'multipart/mixed; boundary="mixed"' },
    ],
    body: { size: 0 },
    parts: [
      contentPart(mail, '0'),
      ...attachments.map((a, i) => ({
        partId: String(i + 1),
        mimeType: a.mimeType ?? 'application/octet-stream',
        filename: a.filename,
        headers: [{ name: 'Content-Disposition', value: `attachment; filename="${a.filename}"` }],
        body: { size: a.size ?? 1024, attachmentId: `att-${mail.id}-${i + 1}` },
      })),
    ],
  };
}
