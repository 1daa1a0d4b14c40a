-- The database's own ceiling for brain's write pattern (issue 11): lock a row
-- by key, compare its revision, replace a 2 KB body, insert an audit row,
-- commit with fsync. One key per client, as brain-bench gives each worker its
-- own project; the audit insert stands for the receipt.
\set k :client_id + 1
BEGIN;
SELECT revision FROM bench_rows WHERE k = :k FOR UPDATE;
UPDATE bench_rows SET revision = revision + 1, body = repeat('x', 2048) WHERE k = :k;
INSERT INTO bench_audit (k, at) VALUES (:k, now());
COMMIT;
