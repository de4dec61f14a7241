-- range_roofline: per-layer roofline of a run timed by its NVTX ranges (a CPU run of a model annotated with
-- rooflake.instrument.annotate, or the CPU side of a GPU run). Time per step comes from range_times; FLOPs and
-- compulsory bytes from a model-estimates run ($estimates_run_id: `rl estimate` of the same model and input shapes,
-- table estimates), joined on the layer's phase (its outermost range: `forward` | `backward`) and module path (its
-- innermost range's name, the path named_modules() gives; the outermost range alone stands for the whole model,
-- path ''); a module's FLOPs include those of the modules inside it. Roofs are the measured ceilings of one
-- machine key ($machine_key, `rl ceilings measure`: CPU keys are 'host | cpu | N threads'): the compute ceiling
-- $ceiling and the bandwidth ceiling $level; where one was measured more than once the highest value is the roof
-- (a peak is the best the machine was measured to do). $ceiling NULL (the default): each layer's own precision, the
-- ceiling `rl ceilings measure` names after the estimates' dtype carrying most of the layer's FLOPs (float64 FP64,
-- float32 FP32, float16 FP16, bfloat16 BF16, float8_* FP8; on a GPU these are GEMMs, on its Tensor Cores); where that
-- ceiling was not measured, peak, attainable, t_min and bound are NULL and peak_reason says why (never another
-- precision's roof). $domain: only the layers of that NVTX domain (NULL, the default: every domain). A step is one
-- call of the layer's outermost range; a module called twice per step counts both calls.
-- performance = F / T; AI = F / Q with Q the compulsory bytes (every input, weight and output once: a lower bound
-- of the traffic at any level, so AI is an upper bound); attainable = min(P, AI * W) (Williams et al. 2009);
-- T_min = max(F / P, Q / W) and inefficiency = T / T_min >= 1 (Wang et al., time-based roofline, 2009.04598).
-- Parameters: $run_id, $estimates_run_id, $machine_key, $ceiling = NULL, $level = 'L2', $domain = NULL.
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
--   peak_flops_per_s        FLOP/s, the measured compute ceiling `ceiling` of $machine_key (NULL: see peak_reason)
--   bw                      byte/s, the measured $level of $machine_key
--   attainable_flops_per_s  FLOP/s = min(peak, ai * bw) (NULL for zero-FLOP layers)
--   t_min_ns                ns = max(flops / peak, bytes / bw) * 1e9
--   inefficiency            time_ns / t_min_ns (>= 1 unless the point is above its roof)
--   bound                   compute | $level: the larger term of t_min
--   above_roof              flops_per_s exceeds attainable by more than 0.1 % (a physics violation: kept, flagged;
--                           NULL for zero-FLOP layers)
--   dtype                   the estimates' dtype carrying most of the layer's FLOPs (modelled: float32, bfloat16, ...)
--   ceiling                 the compute ceiling the layer is judged against: $ceiling, else the one of its dtype
--   peak_reason             why peak_flops_per_s is NULL ('NULL: no BF16 ceiling measured ...'); NULL when known
WITH t AS (
    SELECT
        run_id, layer, domain, stack[1] AS phase, depth, calls, inclusive_ns,
        CASE WHEN depth = 1 THEN '' ELSE stack[len(stack)] END AS module_path
    FROM range_times
    WHERE run_id = $run_id AND stack[1] IN ('forward', 'backward') AND ($domain IS NULL OR domain = $domain)
),
steps AS (
    SELECT domain, phase, calls AS steps FROM t WHERE depth = 1
),
e AS (
    SELECT module_path, phase, flops, bytes_compulsory, dtype FROM estimates WHERE run_id = $estimates_run_id
),
measured AS (
    SELECT ceiling, kind, max(value) AS value
    FROM ceilings
    WHERE source = 'measured' AND machine_key = $machine_key
    GROUP BY ceiling, kind
),
c AS (
    SELECT max(value) FILTER (WHERE ceiling = $level AND kind = 'bandwidth') AS bw FROM measured
),
te AS (
    SELECT t.*, e.module_path AS op_path, e.flops, e.bytes_compulsory, e.dtype
    FROM t
    LEFT JOIN e ON e.phase = t.phase
        AND (t.module_path = '' OR e.module_path = t.module_path OR starts_with(e.module_path, t.module_path || '.'))
),
dtypes AS (
    SELECT
        layer,
        dtype,
        row_number() OVER (PARTITION BY layer ORDER BY sum(coalesce(flops, 0)) DESC, count(*) DESC, dtype) AS rank
    FROM te
    WHERE dtype IS NOT NULL
    GROUP BY layer, dtype
),
j AS (
    SELECT
        t.run_id, t.layer, t.domain, t.phase, t.module_path, t.depth, s.steps, t.calls,
        t.inclusive_ns / s.steps AS time_ns,
        sum(t.flops) AS flops,
        count(*) FILTER (WHERE t.op_path IS NOT NULL AND t.flops IS NULL) AS ops_without_flops,
        sum(t.bytes_compulsory)::BIGINT AS bytes
    FROM te AS t
    JOIN steps AS s ON s.domain = t.domain AND s.phase = t.phase
    GROUP BY ALL
),
jd AS (
    SELECT
        j.*,
        d.dtype,
        coalesce($ceiling, CASE
            WHEN d.dtype = 'float64' THEN 'FP64'
            WHEN d.dtype = 'float32' THEN 'FP32'
            WHEN d.dtype = 'float16' THEN 'FP16'
            WHEN d.dtype = 'bfloat16' THEN 'BF16'
            WHEN starts_with(d.dtype, 'float8') THEN 'FP8'
        END) AS ceiling
    FROM j
    LEFT JOIN dtypes AS d ON d.layer = j.layer AND d.rank = 1
),
p AS (
    SELECT jd.*, m.value AS peak, c.bw
    FROM jd
    LEFT JOIN measured AS m ON m.ceiling = jd.ceiling AND m.kind = 'compute'
    CROSS JOIN c
)
SELECT
    run_id, layer, domain, phase, module_path, depth, steps, calls, time_ns, flops, ops_without_flops, bytes,
    nullif(flops, 0) / nullif(bytes, 0) AS ai,
    flops / (time_ns * 1e-9) AS flops_per_s,
    peak AS peak_flops_per_s,
    bw,
    attainable(peak, nullif(flops, 0) / nullif(bytes, 0), bw) AS attainable_flops_per_s,
    CASE WHEN peak IS NOT NULL THEN greatest(flops / peak, bytes / bw) * 1e9 END AS t_min_ns,
    time_ns / nullif(CASE WHEN peak IS NOT NULL THEN greatest(flops / peak, bytes / bw) * 1e9 END, 0) AS inefficiency,
    CASE WHEN flops / peak >= bytes / bw THEN 'compute' WHEN peak IS NOT NULL AND bw IS NOT NULL THEN $level END
        AS bound,
    flops / (time_ns * 1e-9) > 1.001 * attainable(peak, nullif(flops, 0) / nullif(bytes, 0), bw) AS above_roof,
    dtype,
    ceiling,
    CASE
        WHEN peak IS NOT NULL THEN NULL
        WHEN ceiling IS NULL AND dtype IS NULL THEN 'NULL: no floating-point dtype among the estimates of this layer'
        WHEN ceiling IS NULL THEN 'NULL: no compute ceiling for dtype ' || dtype
        ELSE 'NULL: no ' || ceiling || ' ceiling measured for ' || $machine_key || ' (the ' || coalesce(dtype, '')
            || ' roof: rl ceilings measure; another precision''s roof is not used)'
    END AS peak_reason
FROM p
