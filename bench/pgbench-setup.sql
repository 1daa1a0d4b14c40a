DROP TABLE IF EXISTS bench_rows, bench_audit;
CREATE TABLE bench_rows (k int PRIMARY KEY, revision bigint NOT NULL DEFAULT 0, body text NOT NULL DEFAULT '');
CREATE TABLE bench_audit (id bigserial PRIMARY KEY, k int NOT NULL, at timestamptz NOT NULL);
INSERT INTO bench_rows (k) SELECT generate_series(1, 256);
