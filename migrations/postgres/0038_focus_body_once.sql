-- A focus body is stored once (0036-0038): the focus rows written before hold
-- a copy of the body their history row holds, which goes (body NULL). 0037's
-- functions, which read the history row first, are in place already.
--
-- One row per project and slot, each compared with its history row found by
-- primary key (a correlated lookup: a join may hash every history body
-- instead). Row locks only: a close or a bind of a project waits for this to
-- commit, plain reads do not. A row whose text differs from its history row's (only a hand
-- edit makes one) keeps it, but brain reads the history row all the same.
-- Usage counts history rows, not focus rows (0015), so nothing is recounted.
-- The system scope is what the row-security policies require of work across
-- tenants (0005).
SELECT set_config('brain.scope', 'system', true);

UPDATE focus_bodies f SET body = NULL
 WHERE f.revision > 0 AND f.body IS NOT NULL
   AND f.body = (SELECT h.body FROM focus_history h
                  WHERE h.tenant_id = f.tenant_id AND h.project = f.project
                    AND h.slot = f.slot AND h.revision = f.revision);
