-- estimate_layer_roofline: per-layer roofline points of a run with measured time and modelled work: time per step
-- measured by Nsight Systems (a run without GPU kernels: the inclusive CPU time of the layer's NVTX ranges,
-- range_times; a GPU run: the kernel time under the layer, layer_summary.kernel_time_ns), FLOPs and compulsory bytes
-- per step modelled by an `rl estimate` run of the same model and input shapes ($estimates_run_id, table estimates;
-- joined as range_roofline joins them: the layer's phase, its outermost range `forward` | `backward`, and module
-- path, its innermost range's name; a module's FLOPs include those of the modules inside it). A step is one call of
-- the phase range. A run holding several annotated models (one NVTX domain each) keeps the domain(s) whose module
-- paths the estimates hold best (the largest share of the domain's module paths found in the estimates), so another
-- model's layers never take this model's FLOPs; $domain (NULL: that choice) keeps that NVTX domain instead. The
-- roofs are the rows of `layer_roofs` (the caller picks them: measured CPU ceilings of the run's host and threads,
-- or the ceilings helper's rows for a GPU): every bandwidth ceiling, and the compute ceiling of the layer's
-- precision. That precision is the estimates' dtype carrying most of the layer's FLOPs (float64 fp64, float32 fp32,
-- float16 fp16, bfloat16 bf16, float8_* fp8). Its roof, the first of these that layer_roofs holds: fp64 FP64; fp32
-- FP32; fp16 | bf16 | fp8 on a GPU with Tensor Cores (a GPU run, runs.compute_capability >= 7.0, not a GTX 16xx:
-- Turing's TU116/TU117 have none) the dense Tensor-Core roof of that source type, as kernel_roofs names it (`TENSOR
-- FP16→FP32`: ncu's FP32-accumulate peak, what PyTorch's GEMMs use) or as the datasheet does (`TENSOR FP16`;
-- chosen_kernel_roofs pairs them the same way, and `rl ceilings measure --device cuda` names its GEMM ceilings so),
-- else a measured GEMM ceiling under the bare name (`FP16`, source measured: how files measured before the TENSOR
-- names stored it; its GEMMs ran on the Tensor Cores); without Tensor Cores (a CPU, or a GPU without) the
-- pipe of that precision (FP16, BF16, FP8). Where that roof is missing, peak, attainable and bound are NULL and
-- peak_reason says why: never another precision's roof. The compulsory bytes (every input, weight and output once)
-- are a lower bound of the traffic at any level, so they stand at the level(s) drawn ($level: l1 | l2 | dram | all)
-- and AI is an upper bound there.
-- Same columns and rules as layer_roofline (macros attainable, roof_bound, above_roof; Williams et al. 2009,
-- Wang et al. arXiv 2009.04598), one row per layer at NVTX depth $depth.
-- $match (a regular expression: DuckDB regexp_matches, a partial match; NULL: every layer) keeps the layers whose name
-- it matches.
-- Given: layer_roofs.
-- Parameters: $run_id, $estimates_run_id, $depth, $level, $timed_by, $domain = NULL, $match = NULL.
-- Columns:
--   run_id               run
--   kernel_id            layer number within the run (0-based, by layer), not a kernel
--   name                 the layer: domain:phase/.../module path (range_times.layer)
--   short_name           the layer
--   nvtx_path            the layer
--   precision            the roof's precision: fp64 | fp32 | fp16 | bf16 | fp8, or tensor for fp16 | bf16 | fp8 on a
--                        GPU with Tensor Cores (NULL: no floating-point dtype in the layer's estimates)
--   is_dominant          true (one precision per layer)
--   duration_ns          ns per step, measured (range inclusive time or kernel time, / steps)
--   flops                FLOP per step, modelled (sum of the estimates' flops of the module and those inside it)
--   bytes_l1             byte per step, modelled compulsory bytes when L1 is drawn, else NULL
--   bytes_l2             byte per step, the same at L2
--   bytes_dram           byte per step, the same at DRAM
--   ai_l1                FLOP/byte = flops / bytes_l1 (NULL where bytes are 0 or missing)
--   ai_l2                FLOP/byte at L2
--   ai_dram              FLOP/byte at DRAM
--   achieved_flops_per_s FLOP/s = flops / duration
--   peak_flops_per_s     FLOP/s, the compute roof of the layer's precision in layer_roofs (NULL: see peak_reason)
--   peak_ceiling         the name of that roof (FP32, TENSOR BF16, TENSOR FP16→FP32, ...); NULL where it is missing
--   bw_l1                byte/s, L1's ceiling in layer_roofs
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
--   zero_flops           the model gives the layer no FLOPs (pooling, copies)
--   bound                DRAM | L2 | L1 | upper(precision) (NULL without a roof or FLOPs)
--   levels_without_roof  levels with bytes but no roof in layer_roofs
--   above_roof           achieved exceeds attainable by more than 0.1 %
--   flags                ['ops_without_flops'] when some estimate rows of the layer have no FLOP formula, else []
--   steps                calls of the phase range (steps recorded)
--   calls                calls of the layer's range over all steps
--   launches             GPU kernel launches under the layer over all steps (NULL for a range-timed run)
--   time_source          how duration_ns was measured
--   bytes_compulsory     byte per step, modelled: every input, weight and output once
--   ops                  estimate rows under the layer
--   ops_without_flops    estimate rows of the layer whose FLOPs are NULL (no formula): flops is then a part
--   dtype                the estimates' dtype carrying most of the layer's FLOPs (modelled; float32, bfloat16, ...)
--   peak_reason          why peak_flops_per_s is NULL ('NULL: no TENSOR BF16→FP32 or TENSOR BF16 ... ceiling ...');
--                        NULL where the roof is known
WITH rt AS (
    SELECT run_id, layer, domain, stack, stack[1] AS phase, depth, calls, inclusive_ns,
        CASE WHEN depth = 1 THEN '' ELSE stack[len(stack)] END AS module_path
    FROM range_times
    WHERE run_id = $run_id AND stack[1] IN ('forward', 'backward')
),
steps AS (
    SELECT domain, phase, calls AS steps FROM rt WHERE depth = 1
),
domain_match AS (
    SELECT
        domain,
        coalesce(
            count(DISTINCT module_path) FILTER (
                WHERE depth > 1
                    AND module_path IN (SELECT module_path FROM estimates WHERE run_id = $estimates_run_id)
            ) / nullif(count(DISTINCT module_path) FILTER (WHERE depth > 1), 0),
            0
        ) AS share
    FROM rt
    GROUP BY domain
),
best_domains AS (
    SELECT domain FROM domain_match WHERE share = (SELECT max(share) FROM domain_match)
),
gpu AS (
    SELECT layer, sum(launches)::BIGINT AS launches, sum(kernel_time_ns) AS kernel_time_ns
    FROM layer_summary
    WHERE run_id = $run_id AND depth = $depth AND $timed_by = 'kernels'
    GROUP BY layer
),
e AS (
    SELECT module_path, phase, flops, bytes_compulsory, dtype FROM estimates WHERE run_id = $estimates_run_id
),
je AS (
    SELECT t.run_id, t.layer, t.domain, t.phase, t.calls, t.inclusive_ns, e.module_path, e.flops, e.bytes_compulsory,
        e.dtype
    FROM rt AS t
    LEFT JOIN e ON e.phase = t.phase
        AND (t.module_path = '' OR e.module_path = t.module_path OR starts_with(e.module_path, t.module_path || '.'))
    WHERE t.depth = $depth
        AND CASE WHEN $domain::VARCHAR IS NULL THEN t.domain IN (SELECT domain FROM best_domains)
            ELSE t.domain = $domain::VARCHAR END
),
j AS (
    SELECT
        t.run_id, t.layer, s.steps, t.calls, g.launches,
        CASE WHEN $timed_by = 'kernels' THEN g.kernel_time_ns ELSE t.inclusive_ns END / s.steps AS duration_ns,
        sum(t.flops) AS flops,
        CAST(sum(t.bytes_compulsory) AS BIGINT) AS bytes_compulsory,
        count(t.module_path) AS ops,
        count(*) FILTER (WHERE t.module_path IS NOT NULL AND t.flops IS NULL) AS ops_without_flops
    FROM je AS t
    JOIN steps AS s ON s.domain = t.domain AND s.phase = t.phase
    LEFT JOIN gpu AS g ON g.layer = t.layer
    GROUP BY ALL
),
dtypes AS (
    SELECT
        layer,
        dtype,
        row_number() OVER (PARTITION BY layer ORDER BY sum(coalesce(flops, 0)) DESC, count(*) DESC, dtype) AS rank
    FROM je
    WHERE dtype IS NOT NULL
    GROUP BY layer, dtype
),
machine AS (
    SELECT
        CASE
            WHEN $timed_by <> 'kernels' THEN false
            WHEN regexp_matches(coalesce(gpu_name, ''), 'GTX 16[0-9][0-9]') THEN false
            ELSE TRY_CAST(compute_capability AS DOUBLE) >= 7.0
        END AS tensor_cores
    FROM runs
    WHERE run_id = $run_id
),
lp AS (
    SELECT
        j.layer,
        d.dtype,
        CASE
            WHEN d.dtype = 'float64' THEN 'fp64'
            WHEN d.dtype = 'float32' THEN 'fp32'
            WHEN d.dtype = 'float16' THEN 'fp16'
            WHEN d.dtype = 'bfloat16' THEN 'bf16'
            WHEN starts_with(d.dtype, 'float8') THEN 'fp8'
        END AS dtype_precision,
        m.tensor_cores
    FROM j
    LEFT JOIN dtypes AS d ON d.layer = j.layer AND d.rank = 1
    LEFT JOIN machine AS m ON true
),
lc AS (
    SELECT
        *,
        CASE WHEN dtype_precision IN ('fp16', 'bf16', 'fp8') AND tensor_cores IS NOT false THEN 'tensor'
            ELSE dtype_precision END AS precision,
        CASE
            -- FP64 Tensor Cores (A100, H100, ...: cuBLAS runs DGEMM on them) where the roofs have that ceiling
            WHEN dtype_precision = 'fp64' AND tensor_cores IS true THEN ['TENSOR FP64', 'FP64']
            WHEN dtype_precision IN ('fp64', 'fp32') OR tensor_cores IS false THEN [upper(dtype_precision)]
            ELSE ['TENSOR ' || upper(dtype_precision) || '→FP32', 'TENSOR ' || upper(dtype_precision),
                upper(dtype_precision)]
        END AS candidates
    FROM lp
),
compute_roofs AS (
    SELECT ceiling, source, max(value) AS value
    FROM layer_roofs
    WHERE kind = 'compute' AND value > 0 AND NOT isnan(value)
    GROUP BY ceiling, source
),
roof AS (
    SELECT
        l.layer,
        r.ceiling,
        r.value,
        row_number() OVER (PARTITION BY l.layer ORDER BY list_position(l.candidates, r.ceiling), r.source) AS rank
    FROM lc AS l
    JOIN compute_roofs AS r ON list_contains(l.candidates, r.ceiling)
        -- on Tensor Cores the bare FP16/BF16/FP8 name stands for the measured GEMM ceiling only (a report's FP16
        -- is the non-tensor pipe)
        AND (l.precision <> 'tensor' OR starts_with(r.ceiling, 'TENSOR') OR r.source = 'measured')
    WHERE l.tensor_cores IS NOT NULL OR l.precision <> 'tensor'
),
lr AS (
    SELECT
        l.layer,
        l.dtype,
        l.precision,
        r.ceiling AS peak_ceiling,
        r.value AS peak,
        CASE
            WHEN r.value IS NOT NULL THEN NULL
            WHEN l.dtype IS NULL THEN 'NULL: no floating-point dtype among the estimates of this layer'
            WHEN l.dtype_precision IS NULL THEN 'NULL: no compute roof for dtype ' || l.dtype
            WHEN l.precision = 'tensor' AND l.tensor_cores IS NULL THEN 'NULL: the run''s compute capability is '
                || 'unknown, so whether its GPU has Tensor Cores (the roof of ' || l.dtype || ') is unknown'
            ELSE 'NULL: no ' || array_to_string(
                CASE WHEN l.precision = 'tensor' THEN l.candidates[1:2] || ['measured ' || l.candidates[3]]
                    ELSE l.candidates END,
                ' or '
            ) || ' ceiling among the roofs (the ' || l.dtype || ' roof' || CASE WHEN l.precision = 'tensor'
                THEN ' on Tensor Cores' ELSE '' END || '; another precision''s roof is not used)'
        END AS peak_reason
    FROM lc AS l
    LEFT JOIN roof AS r ON r.layer = l.layer AND r.rank = 1
),
c AS (
    SELECT
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'L1') AS bw_l1,
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'L2') AS bw_l2,
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'DRAM') AS bw_dram
    FROM layer_roofs
),
a AS (
    SELECT
        j.*,
        lr.dtype,
        lr.precision,
        lr.peak_ceiling,
        lr.peak_reason,
        dense_rank() OVER (ORDER BY j.layer) - 1 AS kernel_id,
        CASE WHEN $level IN ('l1', 'all') THEN j.bytes_compulsory END AS bytes_l1,
        CASE WHEN $level IN ('l2', 'all') THEN j.bytes_compulsory END AS bytes_l2,
        CASE WHEN $level IN ('dram', 'all') THEN j.bytes_compulsory END AS bytes_dram,
        j.flops * 1e9 / nullif(j.duration_ns, 0) AS achieved_flops_per_s,
        lr.peak AS peak_flops_per_s,
        c.bw_l1, c.bw_l2, c.bw_dram
    FROM j
    JOIN lr ON lr.layer = j.layer
    CROSS JOIN c
),
r AS (
    SELECT
        *,
        nullif(flops, 0) / nullif(bytes_l1, 0) AS ai_l1,
        nullif(flops, 0) / nullif(bytes_l2, 0) AS ai_l2,
        nullif(flops, 0) / nullif(bytes_dram, 0) AS ai_dram
    FROM a
),
b AS (
    SELECT
        *,
        attainable(peak_flops_per_s, ai_l1, bw_l1) AS attainable_l1,
        attainable(peak_flops_per_s, ai_l2, bw_l2) AS attainable_l2,
        attainable(peak_flops_per_s, ai_dram, bw_dram) AS attainable_dram
    FROM r
),
m AS (
    SELECT *, least(attainable_l1, attainable_l2, attainable_dram) AS attainable_flops_per_s FROM b
)
SELECT
    run_id,
    kernel_id,
    layer AS name,
    layer AS short_name,
    layer AS nvtx_path,
    precision,
    true AS is_dominant,
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
    peak_ceiling,
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
    coalesce(flops, 0) = 0 AS zero_flops,
    roof_bound(attainable_flops_per_s, peak_flops_per_s, precision, attainable_l2, attainable_dram, flops) AS bound,
    levels_without_roof(bytes_l1, bw_l1, bytes_l2, bw_l2, bytes_dram, bw_dram) AS levels_without_roof,
    above_roof(achieved_flops_per_s, attainable_flops_per_s) AS above_roof,
    CASE WHEN ops_without_flops > 0 THEN ['ops_without_flops'] ELSE [] END::VARCHAR[] AS flags,
    steps,
    calls,
    launches,
    CASE WHEN $timed_by = 'kernels' THEN 'measured: GPU kernel time under the layer (nsys)'
        ELSE 'measured: inclusive time of the NVTX ranges (nsys)' END AS time_source,
    bytes_compulsory,
    ops,
    ops_without_flops,
    dtype,
    peak_reason
FROM m
WHERE $match::VARCHAR IS NULL OR regexp_matches(name, $match::VARCHAR)
ORDER BY kernel_id
