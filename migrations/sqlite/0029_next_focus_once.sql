-- A session's next_focus is stored once, as on PostgreSQL (migration 0033
-- there): a close that writes exactly its next_focus as the target body
-- names the body's history row (next_focus_revision, next_focus NULL) and
-- brain reads the text from there (session_columns!). Sessions closed before
-- are moved the same way: the pairs are found from focus_history, each
-- looking its session up by key (CROSS JOIN keeps that order), so the pass
-- is one scan of the history, not a scan of it per session.
ALTER TABLE sessions ADD COLUMN next_focus_revision INTEGER;

CREATE TEMP TABLE brain_next_focus_once (
    tenant_id  TEXT NOT NULL,
    session_id BLOB NOT NULL,
    revision   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id)
);

INSERT OR IGNORE INTO brain_next_focus_once (tenant_id, session_id, revision)
SELECT h.tenant_id, h.session_id, h.revision
  FROM focus_history h CROSS JOIN sessions s
 WHERE s.tenant_id = h.tenant_id AND s.session_id = h.session_id
   AND s.next_focus IS NOT NULL AND s.focus_outcome = 'applied'
   AND s.project = h.project AND COALESCE(s.bound_slot, '') = h.slot
   AND s.next_focus = h.body;

UPDATE sessions SET next_focus = NULL,
    next_focus_revision = (SELECT o.revision FROM brain_next_focus_once o
        WHERE o.tenant_id = sessions.tenant_id AND o.session_id = sessions.session_id)
 WHERE EXISTS (SELECT 1 FROM brain_next_focus_once o
        WHERE o.tenant_id = sessions.tenant_id AND o.session_id = sessions.session_id);

DROP TABLE brain_next_focus_once;
