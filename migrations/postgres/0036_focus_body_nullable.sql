-- A focus body is stored once (0036-0038): a close writes it as the history
-- row of the revision it makes, and the focus row names that revision with no
-- text of its own (body NULL; brain_store_sqlx's focus_body!). This migration
-- only lets the column be NULL: an exclusive lock on focus_bodies for a
-- moment, no rewrite. 0037's functions read the history row first; only then
-- does 0038 clear the copies the rows hold, so no function of the build
-- before ever reads a cleared row.
ALTER TABLE focus_bodies ALTER COLUMN body DROP NOT NULL;
