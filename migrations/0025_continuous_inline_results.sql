-- Continuous-query result tables small enough to travel with their state (src/continuous/,
-- `evaluate.rs`): `result_inline` holds the table as an Arrow IPC stream, committed in the same
-- transaction as the evaluation's state and event, so an incremental evaluation costs one
-- durable commit instead of a file, its folder, a commit and a removal. Larger tables stay
-- Parquet files named by `result_file`; at most one of the two is set. Portable SQL: SQLite
-- keeps blobs as they are in a BYTEA column.
ALTER TABLE continuous_query_users ADD COLUMN result_inline BYTEA;
