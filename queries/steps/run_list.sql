-- run_list: the runs of the store as `rl runs` lists them, oldest first.
-- Columns:
--   run_id               run
--   source               the source file's name (without its folder)
--   gpu_name             GPU as the report names it
--   kernels              kernel launches of the run (runs.n_kernels)
--   labels               the run's labels as 'k1=v1,k2=v2'
--   ingested_at          when the run was ingested, 'YYYY-MM-DD HH:MM:SS' (UTC)
SELECT
    run_id,
    regexp_extract(source_path, '[^/]*$') AS source,
    gpu_name,
    n_kernels AS kernels,
    array_to_string(list_transform(map_entries(labels), lambda e: e.key || '=' || e.value), ',') AS labels,
    strftime(ingested_at, '%Y-%m-%d %H:%M:%S') AS ingested_at
FROM runs
ORDER BY ingested_at, run_id  -- the text above: runs of one second by run id
