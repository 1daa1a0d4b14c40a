-- A tenant's usage row is counted at COMMIT, not at each write's statement.
--
-- Every write of a tenant updates its one tenant_usage row (0015), and holds
-- that row's lock until its transaction ends. A write whose transaction spans
-- round trips (an end: its close statement, then its receipt with the COMMIT)
-- held it across them, so one tenant's ends queued one by one on it, a round
-- trip each: on one tenant, the statement that closed a session spent 5.6 of
-- its 5.9 ms waiting there (pg_stat_statements, 8 agents on one tenant).
--
-- As constraint triggers deferred to COMMIT, the usage is updated after every
-- other statement of the transaction, the ledger tip's lock included: the row
-- is held for the commit's own work and flush, as the tip is, and every
-- transaction takes the two in the same order (tip, then usage), so they
-- cannot deadlock. The count and the quota are what they were: the same
-- function, under the same row lock, so concurrent writers still never
-- overshoot; a write past the quota is refused by its COMMIT, which rolls the
-- whole transaction back.
DROP TRIGGER artifacts_usage ON artifacts;
DROP TRIGGER artifacts_usage_update ON artifacts;
DROP TRIGGER focus_history_usage ON focus_history;
DROP TRIGGER documents_usage ON documents;
DROP TRIGGER documents_usage_update ON documents;
DROP TRIGGER sessions_usage_insert ON sessions;
DROP TRIGGER sessions_usage_update ON sessions;
DROP TRIGGER sessions_usage_delete ON sessions;
DROP TRIGGER daily_briefs_usage ON daily_briefs;

CREATE CONSTRAINT TRIGGER artifacts_usage AFTER INSERT OR DELETE ON artifacts
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION brain_usage_artifacts();
CREATE CONSTRAINT TRIGGER artifacts_usage_update AFTER UPDATE ON artifacts
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.ack_note IS DISTINCT FROM NEW.ack_note OR OLD.text <> NEW.text
        OR OLD.tags <> NEW.tags)
    EXECUTE FUNCTION brain_usage_artifacts();
CREATE CONSTRAINT TRIGGER focus_history_usage AFTER INSERT OR DELETE ON focus_history
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION brain_usage_focus();
CREATE CONSTRAINT TRIGGER documents_usage AFTER INSERT OR DELETE ON documents
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION brain_usage_documents();
CREATE CONSTRAINT TRIGGER documents_usage_update AFTER UPDATE ON documents
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.body <> NEW.body OR OLD.name <> NEW.name)
    EXECUTE FUNCTION brain_usage_documents();
-- A session's every touch updates its row: only a change of its texts counts.
CREATE CONSTRAINT TRIGGER sessions_usage_insert AFTER INSERT ON sessions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.summary IS NOT NULL OR NEW.next_focus IS NOT NULL
        OR NEW.nothing_to_capture_reason IS NOT NULL OR NEW.abandon_reason IS NOT NULL)
    EXECUTE FUNCTION brain_usage_sessions();
CREATE CONSTRAINT TRIGGER sessions_usage_update AFTER UPDATE ON sessions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.summary IS DISTINCT FROM NEW.summary
        OR OLD.next_focus IS DISTINCT FROM NEW.next_focus
        OR OLD.nothing_to_capture_reason IS DISTINCT FROM NEW.nothing_to_capture_reason
        OR OLD.abandon_reason IS DISTINCT FROM NEW.abandon_reason)
    EXECUTE FUNCTION brain_usage_sessions();
CREATE CONSTRAINT TRIGGER sessions_usage_delete AFTER DELETE ON sessions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION brain_usage_sessions();
CREATE CONSTRAINT TRIGGER daily_briefs_usage AFTER INSERT OR UPDATE OR DELETE ON daily_briefs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION brain_usage_briefs();
