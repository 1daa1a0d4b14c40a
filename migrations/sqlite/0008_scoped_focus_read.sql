-- PostgreSQL's 0008 adds a function that reads the focus in one round trip
-- under row-level security; SQLite has neither, so this version only keeps
-- the two migration sets numbered alike.
SELECT 1;
