-- top_layers: per run of $run_ids, the $top outermost NVTX layers (depth 1) that take the most GPU time (ties: by
-- device, then layer), one statement for every run of a report.
-- Parameters: $run_ids, $top.
-- Columns:
--   run_id               run
--   layer                domain:name, or '(no NVTX range)'
--   launches             kernel launches under it
--   gpu_time_ns          ns, kernels + memops
--   share_of_gpu_time    share of the run's GPU time (per device)
--   flops_per_s          FLOP/s over the launches with counters (NULL without)
WITH ranked AS (
    SELECT
        run_id,
        layer,
        launches,
        gpu_time_ns,
        share_of_gpu_time,
        flops_per_s,
        row_number() OVER (PARTITION BY run_id ORDER BY gpu_time_ns DESC, device_id, layer) AS rank
    FROM layer_summary
    WHERE list_contains($run_ids::VARCHAR[], run_id) AND depth = 1
)
SELECT run_id, layer, launches, gpu_time_ns, share_of_gpu_time, flops_per_s
FROM ranked
WHERE rank <= $top
ORDER BY run_id, rank
