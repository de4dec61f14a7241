-- trajectory: how one NVTX layer or one kernel moves on the hierarchical roofline as one knob varies across runs
-- (Javed, Ibrahim, Lu 2019; Ibrahim, Williams, Oliker: roofline trajectories). Runs whose labels hold the key
-- $vary and agree on every other label form a series (a run with another model label is another series); within
-- a series the (AI, FLOP/s) points of the same entity are ordered by the value of label $vary, per memory level.
-- Entities: 'layer' = the NVTX layer at depth $depth (layer_summary, devices summed: FLOP/s = sum F / sum time of
-- the launches with counters, Wang et al.); 'kernel' = (nvtx_path, kernel name, occurrence index in launch order),
-- so a sweep whose runs profiled different subsets still lines up (a kernel absent from a run has no point there).
-- Both kinds are returned: filter with an outer `WHERE entity_kind = 'kernel'`; other labels with e.g.
-- `labels['model'] = 'resnet50'`; layers / kernels under a layer with `regexp_matches(nvtx_path, 'encoder')`.
-- Rows exist only where the entity has FLOP counters and bytes at the level in that run. Order with
-- `ORDER BY series, entity_kind, entity, level, step, run_id` (an outer query does not keep this one's order).
-- Parameters: $vary, $depth.
-- Columns:
--   vary                  the varied label's key ($vary)
--   series                the run's other labels as 'k1=v1, k2=v2' (macro label_series; '' when it has no other
--                         label)
--   labels                the run's labels (map key -> value), for filters
--   entity_kind           layer | kernel
--   entity                the identity across runs: the layer ('domain:outer/inner'), or for a kernel
--                         'nvtx_path | name #occurrence' ('(no NVTX range)' when outside every range)
--   label                 short display name: the layer, or 'short_name #occurrence'
--   nvtx_path             the layer, or the kernel's NVTX path (NULL outside every range)
--   name                  the kernel's demangled name (NULL for layers)
--   short_name            the kernel's base name (NULL for layers)
--   occurrence            1-based launch index of (nvtx_path, name) in the run (NULL for layers)
--   level                 l1 | l2 | dram
--   run_id                the run of this point
--   value                 the label's value (text)
--   value_num             the value as a number (NULL unless it parses as a finite number)
--   value_order           numeric (every value of the series parses as a number) | lexical
--   step                  1..n: rank of the value in the series (dense: runs of one value share a step; an entity
--                         missing from a run skips that step)
--   n_runs                runs of the series
--   n_values              distinct values of the series
--   n_points              points of this series x entity x level
--   precision             precision with the most FLOPs (macro dominant_precision: fp64 | fp32 | fp16 | tensor;
--                         ties: that order)
--   flops                 FLOP, summed over the precisions counted
--   bytes                 byte at the level
--   duration_ns           ns: the kernel's duration (NaN kept), the layer's time of launches with counters
--   ai                    FLOP/byte = flops / bytes (NULL when bytes = 0)
--   flops_per_s           FLOP/s = flops / time (NaN for a NaN duration, NULL for 0)
--   peak_flops_per_s      FLOP/s, the run's roof of that precision (run_roofs: FP64, FP32, FP16, or the run's
--                         tensor roof run_roofs.tensor_roof)
--   peak_ceiling          the name of that roof: FP64 | FP32 | FP16 | the run's tensor roof (e.g.
--                         'TENSOR FP16→FP32'); NULL without a peak
--   bw                    byte/s, the run's roof of the level (run_ceilings: L1, L2, DRAM)
--   attainable_flops_per_s  FLOP/s = min(peak, ai * bw) at this level (macro attainable; NULL without both roofs)
--   above_roof            flops_per_s exceeds attainable by more than 0.1 % (a physics violation: kept, flagged)
--   flags                 kernel flags from ingest; for a layer ['counters_incomplete'] when some of its launches
--                         have no counters (FLOPs, AI and FLOP/s then cover a part of it)
WITH r AS (
    SELECT
        run_id,
        labels,
        labels[$vary] AS value,
        label_series(labels, $vary) AS series,
        CASE WHEN isfinite(try_cast(labels[$vary] AS DOUBLE)) THEN try_cast(labels[$vary] AS DOUBLE) END
            AS value_num
    FROM runs
    WHERE labels[$vary] IS NOT NULL
),
s AS (
    SELECT
        *,
        count(value_num) OVER w = count(*) OVER w AS numeric_series,
        count(*) OVER w AS n_runs
    FROM r
    WINDOW w AS (PARTITION BY series)
),
st AS (
    SELECT
        *,
        CASE WHEN numeric_series
            THEN dense_rank() OVER (PARTITION BY series ORDER BY value_num)
            ELSE dense_rank() OVER (PARTITION BY series ORDER BY value)
        END AS step
    FROM s
),
sr AS (
    SELECT *, max(step) OVER (PARTITION BY series) AS n_values FROM st
),
lay AS (
    SELECT
        run_id,
        'layer' AS entity_kind,
        layer AS entity,
        layer AS label,
        layer AS nvtx_path,
        NULL::VARCHAR AS name,
        NULL::VARCHAR AS short_name,
        NULL::BIGINT AS occurrence,
        sum(flops_fp64) AS flops_fp64,
        sum(flops_fp32) AS flops_fp32,
        sum(flops_fp16) AS flops_fp16,
        sum(flops_tensor) AS flops_tensor,
        sum(flops) AS flops,
        sum(bytes_l1) AS bytes_l1,
        sum(bytes_l2) AS bytes_l2,
        sum(bytes_dram) AS bytes_dram,
        sum(counted_time_ns) AS duration_ns,
        CASE WHEN bool_and(counters_complete) THEN [] ELSE ['counters_incomplete'] END::VARCHAR[] AS flags
    FROM layer_summary
    WHERE depth = $depth AND run_id IN (SELECT run_id FROM r)
    GROUP BY run_id, layer
),
kk AS (
    SELECT
        *,
        row_number() OVER (
            PARTITION BY run_id, coalesce(nvtx_path, ''), name
            ORDER BY launch_start_ns NULLS LAST, correlation_id, kernel_id
        ) AS occ
    FROM kernels
    WHERE run_id IN (SELECT run_id FROM r)
),
ker AS (
    SELECT
        run_id,
        'kernel' AS entity_kind,
        coalesce(nvtx_path, '(no NVTX range)') || ' | ' || name || ' #' || occ AS entity,
        coalesce(short_name, name) || ' #' || occ AS label,
        nvtx_path,
        name,
        short_name,
        occ AS occurrence,
        flops_fp64,
        flops_fp32,
        flops_fp16,
        flops_tensor,
        flops_total(flops_fp64, flops_fp32, flops_fp16, flops_tensor) AS flops,
        bytes_l1,
        bytes_l2,
        bytes_dram,
        duration_ns,
        coalesce(flags, [])::VARCHAR[] AS flags
    FROM kk
),
rc AS (
    SELECT run_id, bw_l1, bw_l2, bw_dram, peak_fp64 AS p_fp64, peak_fp32 AS p_fp32, peak_fp16 AS p_fp16,
           peak_tensor AS p_tensor, tensor_roof
    FROM run_roofs
    WHERE run_id IN (SELECT run_id FROM r)
),
pts AS (
    SELECT * FROM lay
    UNION ALL
    SELECT * FROM ker
),
lv AS (
    SELECT
        p.*,
        l.level,
        l.level_ord,
        CASE l.level WHEN 'l1' THEN p.bytes_l1 WHEN 'l2' THEN p.bytes_l2 ELSE p.bytes_dram END AS bytes
    FROM pts AS p
    CROSS JOIN (VALUES ('l1', 1), ('l2', 2), ('dram', 3)) AS l (level, level_ord)
    WHERE p.flops IS NOT NULL
),
o AS (
    SELECT
        $vary::VARCHAR AS vary,
        sr.series,
        sr.labels,
        lv.entity_kind,
        lv.entity,
        lv.label,
        lv.nvtx_path,
        lv.name,
        lv.short_name,
        lv.occurrence,
        lv.level,
        lv.level_ord,
        sr.run_id,
        sr.value,
        sr.value_num,
        CASE WHEN sr.numeric_series THEN 'numeric' ELSE 'lexical' END AS value_order,
        sr.step,
        sr.n_runs,
        sr.n_values,
        count(*) OVER (PARTITION BY sr.series, lv.entity_kind, lv.entity, lv.level) AS n_points,
        dominant_precision(lv.flops_fp64, lv.flops_fp32, lv.flops_fp16, lv.flops_tensor) AS precision,
        lv.flops,
        lv.bytes,
        lv.duration_ns,
        lv.flops / nullif(lv.bytes, 0) AS ai,
        lv.flops * 1e9 / nullif(lv.duration_ns, 0) AS flops_per_s,
        CASE lv.level WHEN 'l1' THEN rc.bw_l1 WHEN 'l2' THEN rc.bw_l2 ELSE rc.bw_dram END AS bw,
        rc.p_fp64, rc.p_fp32, rc.p_fp16, rc.p_tensor, rc.tensor_roof,
        lv.flags
    FROM sr
    JOIN lv USING (run_id)
    LEFT JOIN rc USING (run_id)
    WHERE lv.bytes IS NOT NULL
),
a AS (
    SELECT
        *,
        by_precision(precision, p_fp64, p_fp32, p_fp16, p_tensor) AS peak_flops_per_s,
        by_precision(precision, 'FP64', 'FP32', 'FP16', tensor_roof) AS roof_name
    FROM o
),
b AS (
    SELECT
        *,
        attainable(peak_flops_per_s, ai, bw) AS attainable_flops_per_s
    FROM a
)
SELECT
    vary, series, labels, entity_kind, entity, label, nvtx_path, name, short_name, occurrence, level, run_id,
    value, value_num, value_order, step, n_runs, n_values, n_points, precision, flops, bytes, duration_ns, ai,
    flops_per_s, peak_flops_per_s, CASE WHEN peak_flops_per_s IS NOT NULL THEN roof_name END AS peak_ceiling, bw,
    attainable_flops_per_s, above_roof(flops_per_s, attainable_flops_per_s) AS above_roof,
    flags
FROM b
ORDER BY series, entity_kind, entity, level_ord, step, run_id
