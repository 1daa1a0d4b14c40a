-- PostgreSQL's 0010 announces every focus change to the other replicas for
-- their memory of focus reads; SQLite serves one process and keeps no such
-- memory, so this version only keeps the two migration sets numbered alike.
SELECT 1;
