-- The session a compatibility profile's start opened or resumed on a
-- connection, and when, so an end that omits the id finds it without walking
-- the tenant's receipts (the chain has no index by connection; the walk read
-- the whole chain when the connection had started nothing).
ALTER TABLE mcp_connections ADD COLUMN started_session_id BLOB;
ALTER TABLE mcp_connections ADD COLUMN started_at INTEGER;
