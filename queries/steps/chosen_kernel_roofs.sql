-- chosen_kernel_roofs: kernel_roofs (each kernel's roofs side by side) of run $run_id against the ceilings of one
-- chosen source instead of the report's per-launch peaks: the caller gives that source's rows as `chosen_ceilings`
-- (source_run_ceilings rows, one per ceiling), and every kernel of the run gets the same roofs. A kernel's tensor
-- roof is the source's ceiling of the same name (kernels.provenance['tensor_roof'], macro tensor_roof), else the
-- source's dense roof of the same source type, as ceilings_side_by_side pairs them (TENSOR FP16→FP32 and TENSOR
-- FP16 HGMMA pair with the datasheet's TENSOR FP16). The views shadow kernel_roofs with these rows, so
-- kernel_roofline and time_roofline (attainable, fraction_of_roof, bound, T_min) follow the chosen source.
-- Given: chosen_ceilings.
-- Parameters: $run_id.
-- Columns:
--   run_id         run
--   kernel_id      kernel launch
--   bw_l1          byte/s, L1 bandwidth ceiling of the source (NULL where it has none)
--   bw_l2          byte/s, L2
--   bw_dram        byte/s, DRAM
--   peak_fp64      FLOP/s, FP64 pipe
--   peak_fp32      FLOP/s, FP32 pipe
--   peak_fp16      FLOP/s, FP16 pipe
--   peak_tensor    FLOP/s, the kernel's tensor roof in the source (see above)
--   tensor_roof    name of that roof in the source (e.g. 'TENSOR FP16'); NULL when the kernel counted no tensor op
--                  or the source has no roof of its source type
WITH c AS (
    SELECT ceiling, max(value) AS value
    FROM chosen_ceilings
    WHERE kind IN ('bandwidth', 'compute') AND value > 0 AND NOT isnan(value)
    GROUP BY ceiling
),
w AS (
    SELECT
        max(value) FILTER (WHERE ceiling = 'L1') AS bw_l1,
        max(value) FILTER (WHERE ceiling = 'L2') AS bw_l2,
        max(value) FILTER (WHERE ceiling = 'DRAM') AS bw_dram,
        max(value) FILTER (WHERE ceiling = 'FP64') AS peak_fp64,
        max(value) FILTER (WHERE ceiling = 'FP32') AS peak_fp32,
        max(value) FILTER (WHERE ceiling = 'FP16') AS peak_fp16
    FROM c
),
k AS (
    SELECT
        run_id,
        kernel_id,
        tensor_roof(provenance) AS own,
        'TENSOR ' || split_part(split_part(tensor_roof(provenance)[8:], ' ', 1), '→', 1) AS pair
    FROM kernels
    WHERE run_id = $run_id
),
t AS (
    SELECT k.run_id, k.kernel_id, coalesce(same.ceiling, paired.ceiling) AS tensor_roof,
        coalesce(same.value, paired.value) AS peak_tensor
    FROM k
    LEFT JOIN c AS same ON same.ceiling = k.own
    LEFT JOIN c AS paired ON paired.ceiling = k.pair
)
SELECT
    t.run_id, t.kernel_id, w.bw_l1, w.bw_l2, w.bw_dram, w.peak_fp64, w.peak_fp32, w.peak_fp16, t.peak_tensor,
    t.tensor_roof
FROM t
CROSS JOIN w
