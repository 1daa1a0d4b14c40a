-- A session's next_focus is stored once (issue 40: each fact stored once).
-- A close that writes exactly its next_focus as the target body left the
-- same text three times: in the focus row, in the body's history row and in
-- the session. From here on the session names the history row's revision
-- instead (next_focus_revision, with next_focus NULL) and brain reads the
-- text from there (brain_session_next_focus, and brain_store_sqlx's
-- session_columns!); a merge, a conflict or a close that writes no body
-- keeps its text in the session as before.
--
-- Adding the column rewrites nothing. The UPDATE below does the same for the
-- sessions closed before: one pass over sessions and focus_history (a hash
-- join), rewriting each applied close's row once; on a large database it
-- holds those rows' locks until the migration commits (docs/deploy.md).
-- It runs in the system scope, as the row-security policies require of
-- work across tenants (0005), and the usage triggers count the bytes it
-- frees at its commit (0019).
ALTER TABLE sessions ADD COLUMN next_focus_revision bigint;

SELECT set_config('brain.scope', 'system', true);

UPDATE sessions s SET next_focus = NULL, next_focus_revision = h.revision
  FROM focus_history h
 WHERE s.next_focus IS NOT NULL AND s.focus_outcome = 'applied'
   AND h.tenant_id = s.tenant_id AND h.session_id = s.session_id
   AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '')
   AND h.body = s.next_focus;
