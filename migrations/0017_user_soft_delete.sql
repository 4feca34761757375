-- Deleting a user is a soft delete (src/store/metadata/deletion.rs): `deleted_at` is set and the
-- user is invisible at once; `POST /v2/user/undo_delete` clears it within the undo window, after
-- which a `store.delete_user` job removes the row, its dependents and the health data. The row
-- keeps its `client_user_id` (unique per team) until then.
ALTER TABLE users ADD COLUMN deleted_at TEXT;
