/**
 * SQL that takes a current store's tables back to their shape at schema version 12, before
 * turn order and marked event copies: session heads without their place, the old index and no
 * triggers (the migrations after the version a test sets create them), events without
 * `copy_of`, mailboxes without `watch_error`. For tests that turn a fresh store file into an older one: the migrations after
 * that version then run on the shape they were written for.
 */
export const BACK_TO_VERSION_12 = `
  DROP TRIGGER actions_head_insert;
  DROP TRIGGER actions_head_state;
  DROP TRIGGER actions_head_backoff;
  CREATE TABLE old_heads (lane TEXT PRIMARY KEY, head_seq INTEGER NOT NULL,
    not_before_ms INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO old_heads SELECT lane, head_seq, not_before_ms FROM session_heads;
  DROP TABLE session_heads;
  ALTER TABLE old_heads RENAME TO session_heads;
  CREATE INDEX session_heads_due ON session_heads (not_before_ms, head_seq);
  DROP INDEX system_events_copies;
  ALTER TABLE system_events DROP COLUMN copy_of;
  ALTER TABLE gmail_mailboxes DROP COLUMN watch_error;
`;
