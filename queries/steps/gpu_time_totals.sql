-- gpu_time_totals: the total GPU time of some runs: kernels (NaN durations left out) and memcpy/memset.
-- Parameters: $run_ids.
-- Columns:
--   run_id               run
--   gpu_time_ns          ns, kernels + memops
SELECT run_id, sum(duration_ns) AS gpu_time_ns
FROM (
    SELECT run_id, duration_ns FROM kernels WHERE NOT isnan(duration_ns)
    UNION ALL
    SELECT run_id, duration_ns FROM memops
)
WHERE list_contains($run_ids::VARCHAR[], run_id)
GROUP BY run_id
ORDER BY run_id
