-- layer_roofline: per-layer roofline points of one run, with kernel_roofline's columns and rules (macros
-- attainable, roof_bound, above_roof): one row per NVTX layer at depth $depth x precision with FLOPs. A layer's
-- AI_l = sum F / sum Q_l over its kernels and its FLOP/s = sum F / sum kernel time of the launches with counters
-- (layer_summary; Wang et al., arXiv 2009.04598, time-weighted per layer). The roofs are the run_roofs of run
-- $counters_run: the run itself, or the Nsight Compute run whose counters an Nsight Systems run borrowed (the
-- caller then shadows `kernels` with the rows of nsys_ncu_match).
-- Parameters: $run_id, $depth, $counters_run.
-- Columns:
--   run_id               run
--   kernel_id            layer number within the run (0-based, by layer then device), not a kernel
--   name                 the layer: domain:outer/.../name, or '(no NVTX range)'
--   short_name           the layer
--   nvtx_path            the layer
--   precision            fp64 | fp32 | fp16 | tensor
--   is_dominant          this precision has the layer's largest FLOP count (ties: first of fp64, fp32, fp16, tensor)
--   duration_ns          ns, kernel time of the layer's launches with counters (layer_summary.counted_time_ns)
--   flops                FLOP of this precision
--   bytes_l1             byte at L1
--   bytes_l2             byte at L2
--   bytes_dram           byte at DRAM
--   ai_l1                FLOP/byte at L1 (NULL where bytes are 0 or missing)
--   ai_l2                FLOP/byte at L2
--   ai_dram              FLOP/byte at DRAM
--   achieved_flops_per_s FLOP/s = flops / duration
--   peak_flops_per_s     FLOP/s, the pipe's ceiling (run_roofs)
--   peak_ceiling         name of that ceiling in run_ceilings: FP64 | FP32 | FP16 | the run's tensor roof
--                        (run_roofs.tensor_roof, e.g. 'TENSOR FP16→FP32'); NULL without a peak
--   bw_l1                byte/s, L1's ceiling
--   bw_l2                byte/s, L2's ceiling
--   bw_dram              byte/s, DRAM's ceiling
--   ridge_l1             FLOP/byte = peak / bandwidth at L1
--   ridge_l2             FLOP/byte at L2
--   ridge_dram           FLOP/byte at DRAM
--   attainable_l1        FLOP/s = min(peak, AI_L1 * W_L1)
--   attainable_l2        FLOP/s at L2
--   attainable_dram      FLOP/s at DRAM
--   attainable_flops_per_s  FLOP/s, the lowest of the levels' attainable
--   fraction_of_roof     achieved / attainable
--   zero_flops           the layer executed no FLOPs of this precision
--   bound                DRAM | L2 | L1 | FP64 | FP32 | FP16 | TENSOR (NULL without ceilings or FLOPs)
--   levels_without_roof  levels with bytes but no roof
--   above_roof           achieved exceeds attainable by more than 0.1 %
--   flags                ['counters_incomplete'] when some launches of the layer have no counters, else []
WITH l AS (
    SELECT * FROM layer_summary WHERE run_id = $run_id AND depth = $depth AND flops IS NOT NULL
),
c AS (
    SELECT bw_l1, bw_l2, bw_dram, peak_fp64, peak_fp32, peak_fp16, peak_tensor, tensor_roof
    FROM run_roofs
    WHERE run_id = $counters_run
),
p AS (
    SELECT
        l.run_id,
        dense_rank() OVER (ORDER BY l.layer, l.device_id) - 1 AS kernel_id,
        l.layer,
        pr.precision,
        pr.ord,
        l.counted_time_ns AS duration_ns,
        by_precision(pr.precision, l.flops_fp64, l.flops_fp32, l.flops_fp16, l.flops_tensor) AS flops,
        by_precision(pr.precision, c.peak_fp64, c.peak_fp32, c.peak_fp16, c.peak_tensor) AS peak_flops_per_s,
        by_precision(pr.precision, 'FP64', 'FP32', 'FP16', c.tensor_roof) AS roof_name,
        l.bytes_l1,
        l.bytes_l2,
        l.bytes_dram,
        c.bw_l1,
        c.bw_l2,
        c.bw_dram,
        l.counters_complete
    FROM l, c, precisions() AS pr
),
a AS (
    SELECT
        *,
        flops / nullif(bytes_l1, 0) AS ai_l1,
        flops / nullif(bytes_l2, 0) AS ai_l2,
        flops / nullif(bytes_dram, 0) AS ai_dram,
        flops * 1e9 / nullif(duration_ns, 0) AS achieved_flops_per_s
    FROM p
    WHERE flops IS NOT NULL
),
r AS (
    SELECT
        *,
        attainable(peak_flops_per_s, ai_l1, bw_l1) AS attainable_l1,
        attainable(peak_flops_per_s, ai_l2, bw_l2) AS attainable_l2,
        attainable(peak_flops_per_s, ai_dram, bw_dram) AS attainable_dram
    FROM a
),
b AS (
    SELECT *, least(attainable_l1, attainable_l2, attainable_dram) AS attainable_flops_per_s FROM r
)
SELECT
    run_id,
    kernel_id,
    layer AS name,
    layer AS short_name,
    layer AS nvtx_path,
    precision,
    row_number() OVER (PARTITION BY kernel_id ORDER BY counted_flops(flops) DESC, ord) = 1 AS is_dominant,
    duration_ns,
    flops,
    bytes_l1,
    bytes_l2,
    bytes_dram,
    ai_l1,
    ai_l2,
    ai_dram,
    achieved_flops_per_s,
    peak_flops_per_s,
    CASE WHEN peak_flops_per_s IS NOT NULL THEN roof_name END AS peak_ceiling,
    bw_l1,
    bw_l2,
    bw_dram,
    peak_flops_per_s / nullif(bw_l1, 0) AS ridge_l1,
    peak_flops_per_s / nullif(bw_l2, 0) AS ridge_l2,
    peak_flops_per_s / nullif(bw_dram, 0) AS ridge_dram,
    attainable_l1,
    attainable_l2,
    attainable_dram,
    attainable_flops_per_s,
    achieved_flops_per_s / nullif(attainable_flops_per_s, 0) AS fraction_of_roof,
    flops = 0 AS zero_flops,
    roof_bound(attainable_flops_per_s, peak_flops_per_s, precision, attainable_l2, attainable_dram, flops) AS bound,
    levels_without_roof(bytes_l1, bw_l1, bytes_l2, bw_l2, bytes_dram, bw_dram) AS levels_without_roof,
    above_roof(achieved_flops_per_s, attainable_flops_per_s) AS above_roof,
    CASE WHEN counters_complete THEN [] ELSE ['counters_incomplete'] END::VARCHAR[] AS flags
FROM b
ORDER BY kernel_id, ord
