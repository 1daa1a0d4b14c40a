-- A focus body is stored once: a close writes it as the history row of the
-- revision it makes, and the focus row names that revision with no text of
-- its own (body NULL; brain_store_sqlx's focus_body!).
-- The rows written before hold a copy of their history row's body: it goes.
-- A row whose text no history row holds (revision 0, or a copy that differs)
-- keeps it, and is read from itself.
--
-- focus_bodies has one row per project and slot, each found by its history
-- row's primary key, so the pass is linear in them. Usage counts history
-- rows, not focus rows (0015), so nothing is recounted. An older build
-- reading a row it now finds NULL fails its read rather than answer an empty
-- focus (docs/deploy.md: replace every replica of the build before 0036).
-- The system scope is what the row-security policies require of work across
-- tenants (0005).
SELECT set_config('brain.scope', 'system', true);

ALTER TABLE focus_bodies ALTER COLUMN body DROP NOT NULL;

UPDATE focus_bodies f SET body = NULL
  FROM focus_history h
 WHERE h.tenant_id = f.tenant_id AND h.project = f.project AND h.slot = f.slot
   AND h.revision = f.revision AND f.body IS NOT NULL AND h.body = f.body;
