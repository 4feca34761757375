-- Events that refer to the samples they announce (src/data/event_records.rs) and pruning of
-- finished jobs and deliveries (src/jobs/prune.rs). Portable SQL, like 0001-0005.
--
-- A push's sample event no longer copies its samples: `body` holds its envelope with an empty
-- record list and `records_ref` where the records are in the health store (the push's stamp,
-- provider, source type, change and window, and the digest of their rendering); the body is
-- rendered again when the event is delivered, replayed or listed. `ref_dataset`, `ref_first`
-- and `ref_last` (µs) find the events a later, overlapping push must write back inline before
-- compaction drops the rows they refer to. Rows written before this migration have no
-- reference: their `body` is whole, as before, and is sent as it is.
ALTER TABLE events ADD COLUMN records_ref TEXT;
ALTER TABLE events ADD COLUMN ref_dataset TEXT;
ALTER TABLE events ADD COLUMN ref_first BIGINT;
ALTER TABLE events ADD COLUMN ref_last BIGINT;

CREATE INDEX events_by_reference ON events (user_id, ref_dataset, ref_last)
    WHERE records_ref IS NOT NULL;

-- The pruning job's scans: finished jobs by age, finished deliveries by age.
CREATE INDEX jobs_finished ON jobs (state, finished_at);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (status, last_attempt_at);
