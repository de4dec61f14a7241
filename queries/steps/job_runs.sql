-- job_runs: the runs of one distributed job (runs.job = $job), one row per run: which rank each claims, of which
-- world size, from which file (views.ranks: two runs claiming one rank, the ranks missing).
-- Parameters: $job.
-- Columns:
--   run_id        VARCHAR  -  the run
--   rank          BIGINT   -  runs.rank (NULL: not said)
--   world_size    BIGINT   -  runs.world_size (NULL: not said)
--   source_path   VARCHAR  -  the file the run was ingested from
SELECT run_id, rank, world_size, source_path FROM runs WHERE job = $job ORDER BY rank NULLS LAST, run_id
