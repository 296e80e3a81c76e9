/**
 * Following `users.history.list` page after page, bounded: at most a fixed
 * number of pages per run. When the bound is reached the ids read so far are
 * returned with `truncated: true` and the token to resume from, never
 * dropped in silence; the mailbox's history id is then withheld, because
 * storing it as the cursor would skip the pages not yet read.
 */
import type { GmailApi } from './api.ts';
import type { GmailOutcome } from './outcome.ts';

/** Most pages read in one run (500 records each). */
export const MAX_HISTORY_PAGES = 20;

/** What one bounded run over the history pages read. */
export type HistoryRun =
  | {
      truncated: false;
      /** Ids of added messages over all pages, first seen first, each once. */
      messageIds: string[];
      /** The mailbox's history id: the cursor for the next run. */
      historyId: string;
      pages: number;
    }
  | {
      truncated: true;
      messageIds: string[];
      /** Resume with the same startHistoryId and this page token. */
      resumePageToken: string;
      pages: number;
    };

/** Where a run starts (and resumes) and how many pages it may read. */
export type HistoryRunRequest = {
  startHistoryId: string;
  labelId?: string;
  /** A `resumePageToken` from a truncated run. */
  pageToken?: string;
  maxPages?: number;
};

/** Read every page of added messages after `startHistoryId`, up to the page bound. */
export async function listAllHistory(
  api: GmailApi,
  request: HistoryRunRequest,
  signal?: AbortSignal,
): Promise<GmailOutcome<HistoryRun>> {
  const maxPages = request.maxPages ?? MAX_HISTORY_PAGES;
  const seen = new Set<string>();
  let pageToken = request.pageToken;
  for (let pages = 1; ; pages++) {
    const page = await api.listHistory(
      {
        startHistoryId: request.startHistoryId,
        ...(request.labelId !== undefined && { labelId: request.labelId }),
        ...(pageToken !== undefined && { pageToken }),
      },
      signal,
    );
    if (page.kind !== 'ok') return page;
    for (const id of page.value.messageIds) seen.add(id);
    const next = page.value.nextPageToken;
    if (next === undefined) {
      const value: HistoryRun = {
        truncated: false,
        messageIds: [...seen],
        historyId: page.value.historyId,
        pages,
      };
      return { kind: 'ok', value };
    }
    if (pages >= maxPages) {
      const value: HistoryRun = {
        truncated: true,
        messageIds: [...seen],
        resumePageToken: next,
        pages,
      };
      return { kind: 'ok', value };
    }
    pageToken = next;
  }
}
