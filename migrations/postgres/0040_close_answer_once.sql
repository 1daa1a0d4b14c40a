-- A close's stored answer (sessions.close_result: a replay answers what the
-- call answered) held a copy of the session row the close wrote: its status,
-- times, summary and ids. A closed session's row is not written again, so
-- brain now stores the answer without it and, at a replay, puts the row back
-- (brain_core::flow::close_answer::stored_form and restore_session). This
-- removes the copy from the answers of ends and relays stored before (the
-- ones with focus_revision_at_end); an abandon's answer is kept whole.
--
-- Row locks on closed sessions only (an open session has no answer), which
-- nothing writes; close_result is not counted in a tenant's usage, so the
-- usage triggers do not fire. The system scope is what the row-security
-- policies require of work across tenants (0005).
SELECT set_config('brain.scope', 'system', true);

UPDATE sessions SET close_result = close_result - 'session'
 WHERE close_result ? 'session' AND close_result ? 'focus_revision_at_end';
