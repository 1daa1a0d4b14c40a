-- brain_todo_ack (SPEC §2.7): the note given when a todo was acknowledged.
ALTER TABLE artifacts ADD COLUMN ack_note text;
