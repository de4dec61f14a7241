-- run_formats: the source format of some runs (ncu-rep, nsys-sqlite, ...), to check what a view was given.
-- Parameters: $run_ids.
-- Columns:
--   run_id               run
--   source_format        runs.source_format
SELECT run_id, source_format FROM runs WHERE list_contains($run_ids::VARCHAR[], run_id) ORDER BY run_id
