-- probe_plan: a one-run query whose plan database.build checks once per database: when this DuckDB shows the
-- `run_id = 'x'` filter in the runs scan as database.scan_runs reads it, queries are pruned; else every file is read.
-- Columns:
--   run_id  the run's id
SELECT run_id FROM runs WHERE run_id = 'x'
