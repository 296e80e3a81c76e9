/**
 * SQL that puts a current store's session heads back in their shape before turn order
 * (schema version 12): no place column, the old index, no triggers (the migrations that
 * follow the version a test sets create them). For tests that turn a fresh store file into
 * an older one: the migrations after that version then run on the shape they were written for.
 */
export const SESSION_HEADS_BEFORE_TURNS = `
  DROP TRIGGER actions_head_insert;
  DROP TRIGGER actions_head_state;
  DROP TRIGGER actions_head_backoff;
  CREATE TABLE old_heads (lane TEXT PRIMARY KEY, head_seq INTEGER NOT NULL,
    not_before_ms INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO old_heads SELECT lane, head_seq, not_before_ms FROM session_heads;
  DROP TABLE session_heads;
  ALTER TABLE old_heads RENAME TO session_heads;
  CREATE INDEX session_heads_due ON session_heads (not_before_ms, head_seq);
`;
