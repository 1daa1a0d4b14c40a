-- The sessions closed before 0033 stored an applied end's next_focus a
-- second time (the first is the history row of the body the end wrote):
-- they name the row instead, as a close does now.
--
-- One pass over sessions and focus_history, rewriting each applied close's
-- row once. A hash join, forced: every history row of a project's base
-- shares its key's first three columns, so the nested loop PostgreSQL
-- plans without statistics (a database that autoanalyze has not reached)
-- scans a project's whole history once per session, which never ended on
-- 200,000 sessions. The usage trigger (0019) would count each row
-- at COMMIT with an update of its tenant's one usage row, and a row updated
-- that many times in one transaction gets slower with each update (a review
-- measured 469 s for 200,000 sessions of one tenant, 1.45 s without the
-- trigger): it is off for this statement, and the bytes freed are counted
-- once per tenant. Disabling it locks sessions against writes (not reads)
-- until this migration commits, so no other transaction writes the table
-- uncounted meanwhile (docs/deploy.md: run it in a quiet hour on a large
-- database). The system scope is what the row-security policies require of
-- work across tenants (0005).
SELECT set_config('brain.scope', 'system', true);
SET LOCAL enable_nestloop = off;
SET LOCAL enable_mergejoin = off;

ALTER TABLE sessions DISABLE TRIGGER sessions_usage_update;

WITH moved AS (
    UPDATE sessions s SET next_focus = NULL, next_focus_revision = h.revision
      FROM focus_history h
     WHERE s.next_focus IS NOT NULL AND s.focus_outcome = 'applied'
       AND h.tenant_id = s.tenant_id AND h.session_id = s.session_id
       AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '')
       AND h.body = s.next_focus
    RETURNING s.tenant_id, octet_length(h.body) AS freed
)
SELECT brain_use(m.tenant_id, -sum(m.freed)::bigint, false)
  FROM moved m GROUP BY m.tenant_id;

ALTER TABLE sessions ENABLE TRIGGER sessions_usage_update;
