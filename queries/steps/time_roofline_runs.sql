-- time_roofline_runs: the time_roofline query of several runs in one statement, each run with its own launch
-- overhead t_o: the rows of run $run_ids[i] are those of time_roofline($run_ids[i], $launch_overheads_ns[i],
-- $launch_overhead_sources[i]), in that query's order. A report of N runs binds the store's files once instead of N
-- times.
-- Parameters: $run_ids, $launch_overheads_ns, $launch_overhead_sources.
-- Columns:
--   time_roofline.*      every column of time_roofline, in its order (run_id first)
WITH o AS (
    SELECT
        unnest($run_ids::VARCHAR[]) AS run_id,
        unnest($launch_overheads_ns::DOUBLE[]) AS t_o,
        unnest($launch_overhead_sources::VARCHAR[]) AS source
)
SELECT t.*
FROM o, LATERAL time_roofline(o.run_id, o.t_o, o.source) AS t
ORDER BY t.run_id, t.grain, t.kernel_id, t.depth, t.device_id, t.kernel_time_ns DESC, t.name
