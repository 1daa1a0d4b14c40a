-- PostgreSQL's 0009 adds the functions that make a write one round trip; SQLite
-- runs in process and has none. Both drop sessions_by_client (0001): its one
-- read, a client's other open session, is what sessions_open_agents (0007)
-- holds, and every start and close wrote to it.
DROP INDEX sessions_by_client;
