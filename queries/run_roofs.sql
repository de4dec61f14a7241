-- run_roofs: each run's roofs side by side, one row per run (run_ceilings pivoted: medians over the run's
-- launches), for views of many kernels at once (layers, trajectories). Tensor: as in kernel_roofs.
-- Columns:
--   run_id
--   bw_l1, bw_l2, bw_dram                                    byte/s
--   peak_fp64, peak_fp32, peak_fp16, peak_tensor             FLOP/s
SELECT
    run_id,
    max(value) FILTER (WHERE ceiling = 'L1') AS bw_l1,
    max(value) FILTER (WHERE ceiling = 'L2') AS bw_l2,
    max(value) FILTER (WHERE ceiling = 'DRAM') AS bw_dram,
    max(value) FILTER (WHERE ceiling = 'FP64') AS peak_fp64,
    max(value) FILTER (WHERE ceiling = 'FP32') AS peak_fp32,
    max(value) FILTER (WHERE ceiling = 'FP16') AS peak_fp16,
    coalesce(max(value) FILTER (WHERE ceiling = 'TENSOR_FP16'), max(value) FILTER (WHERE ceiling = 'TENSOR'))
        AS peak_tensor
FROM run_ceilings
GROUP BY run_id
