-- A close's stored answer no longer holds a copy of the session row the close
-- wrote, as on PostgreSQL (migration 0040 there): a closed session's row is
-- not written again, and a replay puts it back from the row. This removes
-- the copy from the answers of ends and relays stored before (the ones with
-- focus_revision_at_end); an abandon's answer is kept whole. close_result
-- is not counted in a tenant's usage, so no usage trigger fires.
UPDATE sessions SET close_result = json_remove(close_result, '$.session')
 WHERE close_result IS NOT NULL
   AND json_type(close_result, '$.session') IS NOT NULL
   AND json_type(close_result, '$.focus_revision_at_end') IS NOT NULL;
