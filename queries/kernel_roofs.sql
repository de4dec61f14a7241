-- kernel_roofs: each kernel's roofs side by side, one row per kernel: the `ceilings` table (long: one row per
-- kernel x ceiling) pivoted wide (ncu reports a peak per launch, at that launch's clocks). Tensor: the kernel's own
-- tensor roof, the ceiling tensor_roof(kernels.provenance) names: the peak ncu pairs with the op path carrying most
-- of its tensor ops (dense FP16->FP32 for an mma.sync FP16 kernel on Ada, HGMMA FP16 on Hopper, 512 x tensor-pipe
-- instructions on Volta), chosen once at ingest (rooflake.ingest.derive). Rows come by run, then by kernel launch
-- (kernel_id, the launch's index in its report): a report's kernels top to bottom, the same order on every read.
-- Columns:
--   run_id         run
--   kernel_id      kernel launch
--   bw_l1          byte/s, L1 bandwidth ceiling
--   bw_l2          byte/s, L2
--   bw_dram        byte/s, DRAM
--   peak_fp64      FLOP/s, FP64 pipe
--   peak_fp32      FLOP/s, FP32 pipe
--   peak_fp16      FLOP/s, FP16 pipe
--   peak_tensor    FLOP/s, the Tensor-Core roof (see above)
--   tensor_roof    name of that roof (ceilings.ceiling, e.g. 'TENSOR FP16→FP32'); NULL when the kernel counted no
--                  tensor op or the report lacks its peak (kernels.provenance['tensor_roof'] says which)
WITH k AS (SELECT run_id, kernel_id, tensor_roof(provenance) AS tensor_roof FROM kernels)
SELECT
    c.run_id,
    c.kernel_id,
    max(c.value) FILTER (WHERE c.ceiling = 'L1') AS bw_l1,
    max(c.value) FILTER (WHERE c.ceiling = 'L2') AS bw_l2,
    max(c.value) FILTER (WHERE c.ceiling = 'DRAM') AS bw_dram,
    max(c.value) FILTER (WHERE c.ceiling = 'FP64') AS peak_fp64,
    max(c.value) FILTER (WHERE c.ceiling = 'FP32') AS peak_fp32,
    max(c.value) FILTER (WHERE c.ceiling = 'FP16') AS peak_fp16,
    max(c.value) FILTER (WHERE c.ceiling = k.tensor_roof) AS peak_tensor,
    max(k.tensor_roof) FILTER (WHERE c.ceiling = k.tensor_roof) AS tensor_roof
FROM ceilings AS c
LEFT JOIN k ON k.run_id = c.run_id AND k.kernel_id = c.kernel_id
GROUP BY c.run_id, c.kernel_id
ORDER BY c.run_id, c.kernel_id
