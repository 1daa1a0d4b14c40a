-- SQLite has no row-level security: migrations/postgres/0005_row_security.sql
-- has no counterpart here. The version exists so both stores count the same
-- migrations; on SQLite (one local file, one process) isolation rests on the
-- tenant_id in every query.
SELECT 1;
