-- top_layers: the outermost NVTX layers (depth 1) of one run that take the most GPU time.
-- Parameters: $run_id, $top.
-- Columns:
--   layer                domain:name, or '(no NVTX range)'
--   launches             kernel launches under it
--   gpu_time_ns          ns, kernels + memops
--   share_of_gpu_time    share of the run's GPU time (per device)
--   flops_per_s          FLOP/s over the launches with counters (NULL without)
SELECT layer, launches, gpu_time_ns, share_of_gpu_time, flops_per_s
FROM layer_summary
WHERE run_id = $run_id AND depth = 1
ORDER BY gpu_time_ns DESC
LIMIT $top
