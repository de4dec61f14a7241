-- machine_runs: the runs named or labelled for one machine (step machine_ceilings reads their ceilings): the run
-- asked about, and every run whose gpu_name, labels['machine'] or labels['gpu'] is one of the machine's names (ERT
-- and measured runs ingested with --label machine=NAME or gpu=NAME). A step of its own so that machine_ceilings
-- reads the ceilings of these runs only (their ids are a constant list there, which a store read query by query
-- prunes to their files: rooflake.store.database); which runs these are depends on every run's labels, so this
-- step reads the whole `runs` table.
-- Parameters: $run_id, $names.
-- Columns:
--   run_id               run
SELECT run_id FROM runs
WHERE run_id = $run_id
    OR list_contains($names, lower(gpu_name))
    OR list_contains($names, lower(labels['machine']))
    OR list_contains($names, lower(labels['gpu']))
ORDER BY run_id
