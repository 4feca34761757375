-- The request that enqueued a job (src/telemetry/): the `x-request-id` of the HTTP request
-- whose handling enqueued it, or of the request behind the job run that did; NULL for jobs no
-- request asked for (periodic and start-up jobs). A job's run span carries it, so a trace
-- backend finds a request's background work by its id. Portable SQL, like 0002.
ALTER TABLE jobs ADD COLUMN request_id TEXT;
