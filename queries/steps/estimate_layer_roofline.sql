-- estimate_layer_roofline: per-layer roofline points of a run with measured time and modelled work: time per step
-- measured by Nsight Systems (a run without GPU kernels: the inclusive CPU time of the layer's NVTX ranges,
-- range_times; a GPU run: the kernel time under the layer, layer_summary.kernel_time_ns), FLOPs and compulsory
-- bytes per step modelled by an `rl estimate` run of the same model and input shapes ($estimates_run_id, table
-- estimates; joined as range_roofline joins them: the layer's phase, its outermost range `forward` | `backward`, and
-- module path, its innermost range's name; a module's FLOPs include those of the modules inside it). A step is one
-- call of the phase range. A run holding several annotated models (one NVTX domain each) keeps the domain(s) whose
-- module paths the estimates hold best (the largest share of the domain's module paths found in the estimates), so
-- another model's layers never take this model's FLOPs. The roofs are the rows of `layer_roofs` (the caller picks
-- them: measured CPU ceilings of the run's host and threads, or the ceilings helper's rows for a GPU): compute
-- ceiling $ceiling and every bandwidth ceiling. The compulsory bytes (every input, weight and output once) are a lower bound of the traffic at
-- any level, so they stand at the level(s) drawn ($level: l1 | l2 | dram | all) and AI is an upper bound there.
-- Same columns and rules as layer_roofline (macros attainable, roof_bound, above_roof; Williams et al. 2009,
-- Wang et al. arXiv 2009.04598), one row per layer at NVTX depth $depth.
-- Given: layer_roofs.
-- Parameters: $run_id, $estimates_run_id, $depth, $level, $ceiling, $precision, $timed_by.
-- Columns:
--   run_id               run
--   kernel_id            layer number within the run (0-based, by layer), not a kernel
--   name                 the layer: domain:phase/.../module path (range_times.layer)
--   short_name           the layer
--   nvtx_path            the layer
--   precision            $precision (the estimates' dtype)
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
--   peak_flops_per_s     FLOP/s, the $ceiling roof of layer_roofs
--   peak_ceiling         $ceiling where layer_roofs has it, else NULL
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
--   bound                DRAM | L2 | L1 | upper($precision) (NULL without a roof or FLOPs)
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
    SELECT layer, sum(launches) AS launches, sum(kernel_time_ns) AS kernel_time_ns
    FROM layer_summary
    WHERE run_id = $run_id AND depth = $depth AND $timed_by = 'kernels'
    GROUP BY layer
),
e AS (
    SELECT module_path, phase, flops, bytes_compulsory FROM estimates WHERE run_id = $estimates_run_id
),
j AS (
    SELECT
        t.run_id, t.layer, s.steps, t.calls, g.launches,
        CASE WHEN $timed_by = 'kernels' THEN g.kernel_time_ns ELSE t.inclusive_ns END / s.steps AS duration_ns,
        sum(e.flops) AS flops,
        CAST(sum(e.bytes_compulsory) AS BIGINT) AS bytes_compulsory,
        count(e.module_path) AS ops,
        count(*) FILTER (WHERE e.module_path IS NOT NULL AND e.flops IS NULL) AS ops_without_flops
    FROM rt AS t
    JOIN steps AS s ON s.domain = t.domain AND s.phase = t.phase
    LEFT JOIN gpu AS g ON g.layer = t.layer
    LEFT JOIN e ON e.phase = t.phase
        AND (t.module_path = '' OR e.module_path = t.module_path OR starts_with(e.module_path, t.module_path || '.'))
    WHERE t.depth = $depth AND t.domain IN (SELECT domain FROM best_domains)
    GROUP BY ALL
),
c AS (
    SELECT
        max(value) FILTER (WHERE kind = 'compute' AND ceiling = $ceiling) AS peak,
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'L1') AS bw_l1,
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'L2') AS bw_l2,
        max(value) FILTER (WHERE kind = 'bandwidth' AND ceiling = 'DRAM') AS bw_dram
    FROM layer_roofs
),
a AS (
    SELECT
        j.*,
        dense_rank() OVER (ORDER BY j.layer) - 1 AS kernel_id,
        CASE WHEN $level IN ('l1', 'all') THEN j.bytes_compulsory END AS bytes_l1,
        CASE WHEN $level IN ('l2', 'all') THEN j.bytes_compulsory END AS bytes_l2,
        CASE WHEN $level IN ('dram', 'all') THEN j.bytes_compulsory END AS bytes_dram,
        j.flops * 1e9 / nullif(j.duration_ns, 0) AS achieved_flops_per_s,
        c.peak AS peak_flops_per_s,
        c.bw_l1, c.bw_l2, c.bw_dram
    FROM j, c
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
    $precision AS precision,
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
    CASE WHEN peak_flops_per_s IS NOT NULL THEN $ceiling END AS peak_ceiling,
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
    roof_bound(attainable_flops_per_s, peak_flops_per_s, $precision, attainable_l2, attainable_dram, flops) AS bound,
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
    ops_without_flops
FROM m
ORDER BY kernel_id
