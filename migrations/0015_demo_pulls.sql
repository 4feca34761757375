-- Demo connections are pulled like real ones (src/sync/demo.rs): their historical and
-- incremental pulls run the demo generator instead of a provider's API. `demo_persona` names the
-- generated life (`regular`, `traveller`, `athlete`); NULL is a real provider's pull.
ALTER TABLE sync_pulls ADD COLUMN demo_persona TEXT;
