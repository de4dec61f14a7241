-- run_roofs: each run's roofs side by side, one row per run: run_ceilings (long: one row per run x ceiling) pivoted
-- wide (medians over the run's launches), for views of many kernels at once (layers, trajectories). Tensor: the
-- tensor roof of the kernels that carry most of the run's tensor ops (each kernel's as in kernel_roofs).
-- Columns:
--   run_id         run
--   bw_l1          byte/s, L1 bandwidth ceiling
--   bw_l2          byte/s, L2
--   bw_dram        byte/s, DRAM
--   peak_fp64      FLOP/s, FP64 pipe
--   peak_fp32      FLOP/s, FP32 pipe
--   peak_fp16      FLOP/s, FP16 pipe
--   peak_tensor    FLOP/s, the Tensor-Core roof (see above)
--   tensor_roof    name of that roof (run_ceilings.ceiling, e.g. 'TENSOR FP16→FP32'); NULL when no kernel of the
--                  run counted a tensor op
WITH per_roof AS (
    SELECT run_id, tensor_roof(provenance) AS roof, sum(flops_tensor) AS ops
    FROM kernels
    WHERE flops_tensor > 0 AND tensor_roof(provenance) IS NOT NULL
    GROUP BY run_id, roof
),
t AS (SELECT run_id, arg_max(roof, ops) AS tensor_roof FROM per_roof GROUP BY run_id)
SELECT
    c.run_id,
    max(c.value) FILTER (WHERE c.ceiling = 'L1') AS bw_l1,
    max(c.value) FILTER (WHERE c.ceiling = 'L2') AS bw_l2,
    max(c.value) FILTER (WHERE c.ceiling = 'DRAM') AS bw_dram,
    max(c.value) FILTER (WHERE c.ceiling = 'FP64') AS peak_fp64,
    max(c.value) FILTER (WHERE c.ceiling = 'FP32') AS peak_fp32,
    max(c.value) FILTER (WHERE c.ceiling = 'FP16') AS peak_fp16,
    max(c.value) FILTER (WHERE c.ceiling = t.tensor_roof) AS peak_tensor,
    max(t.tensor_roof) FILTER (WHERE c.ceiling = t.tensor_roof) AS tensor_roof
FROM run_ceilings AS c
LEFT JOIN t ON t.run_id = c.run_id
GROUP BY c.run_id
