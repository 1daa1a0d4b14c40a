-- What an agent needs to pick a session back up (issue 38): the revision of
-- the focus its end writes as the session last read it (start, bind, a
-- relay's receiver; NULL only on a session bound before this migration),
-- and the session whose relay opened it. PostgreSQL's 0016 says more.
ALTER TABLE sessions ADD COLUMN read_revision INTEGER;
ALTER TABLE sessions ADD COLUMN relayed_from BLOB;
