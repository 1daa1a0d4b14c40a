-- A focus body is stored once, as on PostgreSQL (migrations 0036-0038 there): a
-- close writes it as the history row of the revision it makes, and the
-- focus row names that revision with no text of its own ('': the column
-- cannot drop NOT NULL here; brain_store_sqlx's focus_body! reads the
-- history row first). The rows written before hold a copy of their history
-- row's body: it goes. A row whose text differs from its history row's (only
-- a hand edit makes one) keeps it, but brain reads the history row all the same.
UPDATE focus_bodies SET body = ''
 WHERE revision > 0 AND body <> ''
   AND body = (SELECT h.body FROM focus_history h
                WHERE h.tenant_id = focus_bodies.tenant_id AND h.project = focus_bodies.project
                  AND h.slot = focus_bodies.slot AND h.revision = focus_bodies.revision);
