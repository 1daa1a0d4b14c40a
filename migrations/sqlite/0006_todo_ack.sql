-- SQLite dialect of migrations/postgres/0006_todo_ack.sql.
ALTER TABLE artifacts ADD COLUMN ack_note TEXT;
