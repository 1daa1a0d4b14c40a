-- A session's next_focus is stored once (issue 40): a close that writes
-- exactly its next_focus as the target body names that body's history row
-- here (next_focus_revision) and leaves next_focus NULL; brain reads the text
-- from the row (brain_session_next_focus, brain_store_sqlx's
-- session_columns!). A migration of its own: adding a column rewrites
-- nothing, but takes an exclusive lock on sessions until its transaction
-- commits, which here is at once (0034 moves the sessions closed before).
ALTER TABLE sessions ADD COLUMN next_focus_revision bigint;
