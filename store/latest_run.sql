-- latest_run: the id of the run ingested last (Store.resolve with no run id); ties broken by run id.
-- Columns:
--   run_id  the run's id (16 hex digits of the source file's SHA-256)
SELECT run_id FROM runs ORDER BY ingested_at DESC, run_id LIMIT 1
