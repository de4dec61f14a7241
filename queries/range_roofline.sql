-- range_roofline: per-layer roofline of a run timed by its NVTX ranges (a CPU run of a model annotated with
-- rooflake.instrument.annotate, or the CPU side of a GPU run). Time per step comes from range_times; FLOPs and
-- compulsory bytes from a model-estimates run ($estimates_run_id: `rl estimate` of the same model and input shapes,
-- table estimates), joined on the layer's phase (its outermost range: `forward` | `backward`) and module path (its
-- innermost range's name, the path named_modules() gives; the outermost range alone stands for the whole model,
-- path ''); a module's FLOPs include those of the modules inside it. Roofs are the measured ceilings of one
-- machine key ($machine_key, `rl ceilings measure`: CPU keys are 'host | cpu | N threads'): the compute ceiling
-- $ceiling and the bandwidth ceiling $level; where one was measured more than once the highest value is the roof
-- (a peak is the best the machine was measured to do). A step is one call of the layer's outermost range; a module
-- called twice per step counts both calls.
-- performance = F / T; AI = F / Q with Q the compulsory bytes (every input, weight and output once: a lower bound
-- of the traffic at any level, so AI is an upper bound); attainable = min(P, AI * W) (Williams et al. 2009);
-- T_min = max(F / P, Q / W) and inefficiency = T / T_min >= 1 (Wang et al., time-based roofline, 2009.04598).
-- Parameters: $run_id, $estimates_run_id, $machine_key, $ceiling = 'FP32', $level = 'L2'.
-- Columns:
--   run_id                  the profiled run
--   layer                   domain:phase/.../module path (range_times.layer)
--   domain                  NVTX domain (annotate's `domain`)
--   phase                   forward | backward
--   module_path             the module's path ('' = the whole model)
--   depth                   1 = the phase range (the whole model), 2 = a module called by it, ...
--   steps                   calls of the phase range (training or inference steps recorded)
--   calls                   calls of the layer's range over all steps
--   time_ns                 ns per step, inclusive (range_times.inclusive_ns / steps)
--   flops                   FLOP per step (estimates of the module and the modules inside it)
--   ops_without_flops       estimate rows of the layer whose FLOPs are NULL (no formula): flops is then a part
--   bytes                   byte per step, compulsory (estimates.bytes_compulsory)
--   ai                      FLOP/byte = flops / bytes (NULL when bytes = 0, and for zero-FLOP layers — pooling,
--                           copies — which have no place on a log-AI axis: their time is in time_ns)
--   flops_per_s             FLOP/s = flops / (time_ns * 1e-9)
--   peak_flops_per_s        FLOP/s, the measured $ceiling of $machine_key
--   bw                      byte/s, the measured $level of $machine_key
--   attainable_flops_per_s  FLOP/s = min(peak, ai * bw) (NULL for zero-FLOP layers)
--   t_min_ns                ns = max(flops / peak, bytes / bw) * 1e9
--   inefficiency            time_ns / t_min_ns (>= 1 unless the point is above its roof)
--   bound                   compute | $level: the larger term of t_min
--   above_roof              flops_per_s exceeds attainable by more than 0.1 % (a physics violation: kept, flagged;
--                           NULL for zero-FLOP layers)
WITH t AS (
    SELECT
        run_id, layer, domain, stack[1] AS phase, depth, calls, inclusive_ns,
        CASE WHEN depth = 1 THEN '' ELSE stack[len(stack)] END AS module_path
    FROM range_times
    WHERE run_id = $run_id AND stack[1] IN ('forward', 'backward')
),
steps AS (
    SELECT domain, phase, calls AS steps FROM t WHERE depth = 1
),
e AS (
    SELECT module_path, phase, flops, bytes_compulsory FROM estimates WHERE run_id = $estimates_run_id
),
c AS (
    SELECT
        max(value) FILTER (WHERE ceiling = $ceiling AND kind = 'compute') AS peak,
        max(value) FILTER (WHERE ceiling = $level AND kind = 'bandwidth') AS bw
    FROM ceilings
    WHERE source = 'measured' AND machine_key = $machine_key
),
j AS (
    SELECT
        t.run_id, t.layer, t.domain, t.phase, t.module_path, t.depth, s.steps, t.calls,
        t.inclusive_ns / s.steps AS time_ns,
        sum(e.flops) AS flops,
        count(*) FILTER (WHERE e.module_path IS NOT NULL AND e.flops IS NULL) AS ops_without_flops,
        sum(e.bytes_compulsory) AS bytes
    FROM t
    JOIN steps AS s ON s.domain = t.domain AND s.phase = t.phase
    LEFT JOIN e ON e.phase = t.phase
        AND (t.module_path = '' OR e.module_path = t.module_path OR starts_with(e.module_path, t.module_path || '.'))
    GROUP BY ALL
)
SELECT
    j.*,
    nullif(j.flops, 0) / nullif(j.bytes, 0) AS ai,
    j.flops / (j.time_ns * 1e-9) AS flops_per_s,
    c.peak AS peak_flops_per_s,
    c.bw,
    attainable(c.peak, nullif(j.flops, 0) / nullif(j.bytes, 0), c.bw) AS attainable_flops_per_s,
    greatest(j.flops / c.peak, j.bytes / c.bw) * 1e9 AS t_min_ns,
    j.time_ns / nullif(greatest(j.flops / c.peak, j.bytes / c.bw) * 1e9, 0) AS inefficiency,
    CASE WHEN j.flops / c.peak >= j.bytes / c.bw THEN 'compute' ELSE $level END AS bound,
    j.flops / (j.time_ns * 1e-9) > 1.001 * attainable(c.peak, nullif(j.flops, 0) / nullif(j.bytes, 0), c.bw)
        AS above_roof
FROM j, c
