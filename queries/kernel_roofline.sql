-- kernel_roofline: where each profiled kernel sits against its own roofs, one row per kernel x precision that has
-- FLOP counters (fp64, fp32, fp16, tensor). Hierarchical roofline (Yang et al., "Hierarchical Roofline analysis
-- for GPUs", 2020; ncu SpeedOfLight_Hierarchical*RooflineChart): AI_l = F / Q_l, attainable_l = min(P, AI_l * W_l),
-- the kernel's attainable = min over levels; bound = the level (or the pipe) whose roof is lowest at its AI.
-- Ceilings are the kernel's own (peak_sustained x its clocks: view kernel_roofs, which also says which tensor roof).
-- Columns:
--   run_id, kernel_id, name, short_name, nvtx_path   identity (kernels table)
--   precision            fp64 | fp32 | fp16 | tensor
--   is_dominant          this precision has the kernel's largest FLOP count (ties: first of fp64, fp32, fp16, tensor)
--   duration_ns          ns
--   flops                FLOP of this precision
--   bytes_l1, bytes_l2, bytes_dram                     byte
--   ai_l1, ai_l2, ai_dram                              FLOP/byte (NULL where bytes are 0 or missing)
--   achieved_flops_per_s FLOP/s = flops / duration
--   peak_flops_per_s     FLOP/s, the pipe's ceiling
--   bw_l1, bw_l2, bw_dram                              byte/s, the levels' ceilings
--   ridge_l1, ridge_l2, ridge_dram                     FLOP/byte = peak / bandwidth
--   attainable_l1, attainable_l2, attainable_dram      FLOP/s = min(peak, AI_l * W_l)
--   attainable_flops_per_s  FLOP/s, the lowest of the levels' attainable
--   fraction_of_roof     achieved / attainable (0..1; > 1 is a physics violation)
--   zero_flops           the kernel executed no FLOPs of this precision (copies, casts: no place on a log-AI axis)
--   bound                DRAM | L2 | L1 | FP64 | FP32 | FP16 | TENSOR (NULL without ceilings or FLOPs), over the
--                        levels that have both bytes and a roof
--   levels_without_roof  levels with bytes but no roof in the report (the bound cannot account for them)
--   above_roof           achieved exceeds attainable by more than 0.1 %
--   flags                kernel flags from ingest (nan_duration, zero_peak, ...)
WITH c AS (SELECT * FROM kernel_roofs),
p AS (
    SELECT
        k.run_id,
        k.kernel_id,
        k.name,
        k.short_name,
        k.nvtx_path,
        pr.precision,
        pr.ord,
        k.duration_ns,
        CASE pr.precision
            WHEN 'fp64' THEN k.flops_fp64 WHEN 'fp32' THEN k.flops_fp32
            WHEN 'fp16' THEN k.flops_fp16 ELSE k.flops_tensor
        END AS flops,
        CASE pr.precision
            WHEN 'fp64' THEN c.peak_fp64 WHEN 'fp32' THEN c.peak_fp32
            WHEN 'fp16' THEN c.peak_fp16 ELSE c.peak_tensor
        END AS peak_flops_per_s,
        upper(pr.precision) AS pipe,
        k.bytes_l1,
        k.bytes_l2,
        k.bytes_dram,
        c.bw_l1,
        c.bw_l2,
        c.bw_dram,
        k.flags
    FROM kernels AS k
    LEFT JOIN c USING (run_id, kernel_id)
    CROSS JOIN (VALUES ('fp64', 1), ('fp32', 2), ('fp16', 3), ('tensor', 4)) AS pr (precision, ord)
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
        CASE WHEN ai_l1 IS NOT NULL AND bw_l1 IS NOT NULL AND peak_flops_per_s IS NOT NULL
            THEN least(peak_flops_per_s, ai_l1 * bw_l1) END AS attainable_l1,
        CASE WHEN ai_l2 IS NOT NULL AND bw_l2 IS NOT NULL AND peak_flops_per_s IS NOT NULL
            THEN least(peak_flops_per_s, ai_l2 * bw_l2) END AS attainable_l2,
        CASE WHEN ai_dram IS NOT NULL AND bw_dram IS NOT NULL AND peak_flops_per_s IS NOT NULL
            THEN least(peak_flops_per_s, ai_dram * bw_dram) END AS attainable_dram
    FROM a
),
b AS (
    SELECT
        *,
        least(attainable_l1, attainable_l2, attainable_dram) AS attainable_flops_per_s
    FROM r
)
SELECT
    run_id,
    kernel_id,
    name,
    short_name,
    nvtx_path,
    precision,
    row_number() OVER (PARTITION BY run_id, kernel_id ORDER BY flops DESC NULLS LAST, ord) = 1 AS is_dominant,
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
    CASE
        WHEN attainable_flops_per_s IS NULL OR flops = 0 THEN NULL
        WHEN attainable_flops_per_s >= peak_flops_per_s THEN pipe
        WHEN attainable_flops_per_s = attainable_dram THEN 'DRAM'
        WHEN attainable_flops_per_s = attainable_l2 THEN 'L2'
        ELSE 'L1'
    END AS bound,
    list_filter(
        [CASE WHEN bytes_l1 IS NOT NULL AND bw_l1 IS NULL THEN 'L1' END,
         CASE WHEN bytes_l2 IS NOT NULL AND bw_l2 IS NULL THEN 'L2' END,
         CASE WHEN bytes_dram IS NOT NULL AND bw_dram IS NULL THEN 'DRAM' END],
        lambda x: x IS NOT NULL
    ) AS levels_without_roof,
    -- DuckDB orders NaN above every number: test it first
    coalesce(NOT isnan(achieved_flops_per_s) AND achieved_flops_per_s > attainable_flops_per_s * 1.001, false)
        AS above_roof,
    flags
FROM b
ORDER BY run_id, kernel_id, ord
