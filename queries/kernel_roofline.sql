-- kernel_roofline: where each profiled kernel sits against its own roofs, one row per kernel x precision that has
-- FLOP counters (fp64, fp32, fp16, tensor). Hierarchical roofline (Yang et al., "Hierarchical Roofline analysis
-- for GPUs", 2020; ncu SpeedOfLight_Hierarchical*RooflineChart): AI_l = F / Q_l, attainable_l = min(P, AI_l * W_l),
-- the kernel's attainable = min over levels; bound = the level (or the pipe) whose roof is lowest at its AI.
-- Ceilings are the kernel's own (peak_sustained x its clocks: view kernel_roofs, which also says which tensor roof).
-- Columns:
--   run_id                 VARCHAR   -       run
--   kernel_id              BIGINT    -       kernel launch (kernels table)
--   name                   VARCHAR   -       demangled kernel name
--   short_name             VARCHAR   -       base name
--   nvtx_path              VARCHAR   -       domain:outer/.../leaf NVTX path (NULL outside every range)
--   precision              VARCHAR   -       fp64 | fp32 | fp16 | tensor
--   is_dominant            BOOLEAN   -       this precision has the kernel's largest FLOP count (NaN counts as none;
--                                            ties: first of fp64, fp32, fp16, tensor)
--   duration_ns            DOUBLE    ns      the launch's duration
--   flops                  DOUBLE    FLOP    of this precision
--   bytes_l1               DOUBLE    byte    at L1
--   bytes_l2               DOUBLE    byte    at L2
--   bytes_dram             DOUBLE    byte    at DRAM
--   ai_l1                  DOUBLE    FLOP/byte at L1 (NULL where bytes are 0 or missing)
--   ai_l2                  DOUBLE    FLOP/byte at L2
--   ai_dram                DOUBLE    FLOP/byte at DRAM
--   achieved_flops_per_s   DOUBLE    FLOP/s  = flops / duration
--   peak_flops_per_s       DOUBLE    FLOP/s  the pipe's ceiling
--   peak_ceiling           VARCHAR   -       name of that ceiling in `ceilings` / run_ceilings: FP64 | FP32 | FP16,
--                                            or the kernel's tensor roof (kernel_roofs.tensor_roof, e.g. 'TENSOR
--                                            FP16→FP32'); NULL where the report has no peak
--   bw_l1                  DOUBLE    byte/s  L1's ceiling
--   bw_l2                  DOUBLE    byte/s  L2's ceiling
--   bw_dram                DOUBLE    byte/s  DRAM's ceiling
--   ridge_l1               DOUBLE    FLOP/byte = peak / bandwidth at L1
--   ridge_l2               DOUBLE    FLOP/byte at L2
--   ridge_dram             DOUBLE    FLOP/byte at DRAM
--   attainable_l1          DOUBLE    FLOP/s  = min(peak, AI_L1 * W_L1) (macro attainable)
--   attainable_l2          DOUBLE    FLOP/s  at L2
--   attainable_dram        DOUBLE    FLOP/s  at DRAM
--   attainable_flops_per_s DOUBLE    FLOP/s  the lowest of the levels' attainable
--   fraction_of_roof       DOUBLE    1       achieved / attainable (0..1; > 1 is a physics violation)
--   zero_flops             BOOLEAN   -       the kernel executed no FLOPs of this precision (copies, casts: no place
--                                            on a log-AI axis)
--   bound                  VARCHAR   -       DRAM | L2 | L1 | FP64 | FP32 | FP16 | TENSOR (macro roof_bound; NULL
--                                            without ceilings or FLOPs), over the levels that have both bytes and a
--                                            roof
--   levels_without_roof    VARCHAR[] -       levels with bytes but no roof in the report (the bound cannot account
--                                            for them)
--   above_roof             BOOLEAN   -       achieved exceeds attainable by more than 0.1 % (macro above_roof)
--   flags                  VARCHAR[] -       kernel flags from ingest (nan_duration, zero_peak, ...)
--   flops_uncounted        VARCHAR[] -       the precisions whose FLOP counter the kernel lacks (no row of theirs): 0
--                                            FLOPs where counted is then not a zero-FLOP kernel (an int8 GEMM without
--                                            its Tensor-Core counts)
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
        by_precision(pr.precision, k.flops_fp64, k.flops_fp32, k.flops_fp16, k.flops_tensor) AS flops,
        by_precision(pr.precision, c.peak_fp64, c.peak_fp32, c.peak_fp16, c.peak_tensor) AS peak_flops_per_s,
        by_precision(pr.precision, 'FP64', 'FP32', 'FP16', c.tensor_roof) AS roof_name,
        k.bytes_l1,
        k.bytes_l2,
        k.bytes_dram,
        c.bw_l1,
        c.bw_l2,
        c.bw_dram,
        k.flags,
        list_filter(
            [CASE WHEN k.flops_fp64 IS NULL THEN 'fp64' END, CASE WHEN k.flops_fp32 IS NULL THEN 'fp32' END,
             CASE WHEN k.flops_fp16 IS NULL THEN 'fp16' END, CASE WHEN k.flops_tensor IS NULL THEN 'tensor' END],
            lambda x: x IS NOT NULL
        ) AS flops_uncounted
    FROM kernels AS k
    LEFT JOIN c USING (run_id, kernel_id)
    CROSS JOIN precisions() AS pr
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
    row_number() OVER (PARTITION BY run_id, kernel_id ORDER BY counted_flops(flops) DESC, ord) = 1 AS is_dominant,
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
    flags,
    flops_uncounted
FROM b
ORDER BY run_id, kernel_id, ord
