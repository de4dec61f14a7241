-- chosen_run_roofs: run_roofs (one row per run, roofs side by side) of run $run_id against the ceilings of one chosen
-- source (`chosen_ceilings`, source_run_ceilings rows; see chosen_kernel_roofs), for views of many kernels at once
-- (layer_roofline shadows run_roofs with it). Tensor: the roof of the kernels that carry most of the run's tensor
-- ops, the source's ceiling of that name else its dense roof of the same source type.
-- Given: chosen_ceilings.
-- Parameters: $run_id.
-- Columns:
--   run_id         run
--   bw_l1          byte/s, L1 bandwidth ceiling of the source (NULL where it has none)
--   bw_l2          byte/s, L2
--   bw_dram        byte/s, DRAM
--   peak_fp64      FLOP/s, FP64 pipe
--   peak_fp32      FLOP/s, FP32 pipe
--   peak_fp16      FLOP/s, FP16 pipe
--   peak_tensor    FLOP/s, the Tensor-Core roof (see above)
--   tensor_roof    name of that roof in the source; NULL when no kernel of the run counted a tensor op or the
--                  source has no roof of its source type
WITH c AS (
    SELECT ceiling, max(value) AS value
    FROM chosen_ceilings
    WHERE kind IN ('bandwidth', 'compute') AND value > 0 AND NOT isnan(value)
    GROUP BY ceiling
),
per_roof AS (
    SELECT tensor_roof(provenance) AS roof, sum(flops_tensor) AS ops
    FROM kernels
    WHERE run_id = $run_id AND flops_tensor > 0 AND tensor_roof(provenance) IS NOT NULL
    GROUP BY roof
),
top AS (
    SELECT
        arg_max(roof, ops) AS own,
        'TENSOR ' || split_part(split_part(arg_max(roof, ops)[8:], ' ', 1), '→', 1) AS pair
    FROM per_roof
),
t AS (
    SELECT coalesce(same.ceiling, paired.ceiling) AS tensor_roof, coalesce(same.value, paired.value) AS peak_tensor
    FROM top
    LEFT JOIN c AS same ON same.ceiling = top.own
    LEFT JOIN c AS paired ON paired.ceiling = top.pair
)
SELECT
    $run_id::VARCHAR AS run_id,
    max(value) FILTER (WHERE ceiling = 'L1') AS bw_l1,
    max(value) FILTER (WHERE ceiling = 'L2') AS bw_l2,
    max(value) FILTER (WHERE ceiling = 'DRAM') AS bw_dram,
    max(value) FILTER (WHERE ceiling = 'FP64') AS peak_fp64,
    max(value) FILTER (WHERE ceiling = 'FP32') AS peak_fp32,
    max(value) FILTER (WHERE ceiling = 'FP16') AS peak_fp16,
    (SELECT peak_tensor FROM t) AS peak_tensor,
    (SELECT tensor_roof FROM t) AS tensor_roof
FROM c
