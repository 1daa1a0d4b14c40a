-- brain_session_next_focus (0035) is no longer called: since 0037 the
-- functions that read a session write its expression out, because PostgreSQL
-- does not inline a SQL function holding a scalar subquery and plans its
-- query again at each call.
DROP FUNCTION IF EXISTS brain_session_next_focus(sessions);
