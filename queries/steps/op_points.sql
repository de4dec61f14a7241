-- op_points: the roofline points of a trace run whose work comes from its recorded shapes (op_roofline), in the
-- columns of layer_roofline so that the roofline chart draws them: per op ($grain = 'op': each op that carries its
-- chain's work, FLOPs or bytes known, views left out) or per NVTX layer ($grain = 'layer': the carrying ops whose
-- range stack lies under the layer at $depth, labelled by nvtx_layer over the op's domain and stack as
-- layer_summary labels kernels). A layer's time: on a GPU run the kernel time under the layer (layer_summary,
-- every launch, measured), else the CPU time of its carrying ops; its FLOPs and bytes the sum of its carrying ops'
-- (modelled). Bytes are the compulsory bytes, drawn at DRAM (an upper bound of the DRAM AI); the roofs are
-- op_roofline's (the datasheet's DRAM bandwidth, each op's dtype roof; a layer's roof is that of the dtype carrying
-- most of its FLOPs).
-- Parameters: $run_id, $grain, $depth, $launch_overhead_ns = 1000.
-- Columns:
--   run_id               run
--   kernel_id            the op's op_id (grain op) or the layer's number (grain layer), not a kernel
--   name                 op: 'op_name input_dims'; layer: domain:outer/.../name
--   short_name           op: op_name; layer: the layer
--   nvtx_path            op: its module path (or its NVTX stack); layer: the layer
--   precision            fp64 | fp32 | fp16 | tensor: the pipe of the roof (TENSOR * -> tensor, BF16 -> fp16)
--   is_dominant          true (one precision per point)
--   duration_ns          ns, measured (op_roofline.time_ns; a layer: see above)
--   flops                FLOP, modelled
--   bytes_l1             byte, NULL (no L1 roof for a trace run)
--   bytes_l2             byte, NULL
--   bytes_dram           byte, modelled compulsory bytes
--   ai_l1                FLOP/byte, NULL
--   ai_l2                FLOP/byte, NULL
--   ai_dram              FLOP/byte = flops / bytes_dram
--   achieved_flops_per_s FLOP/s = flops / duration
--   peak_flops_per_s     FLOP/s, the roof of the point's dtype
--   peak_ceiling         the name of that roof
--   bw_l1                byte/s, NULL
--   bw_l2                byte/s, NULL
--   bw_dram              byte/s, the datasheet's DRAM bandwidth
--   ridge_l1             FLOP/byte, NULL
--   ridge_l2             FLOP/byte, NULL
--   ridge_dram           FLOP/byte = peak / bw_dram
--   attainable_l1        FLOP/s, NULL
--   attainable_l2        FLOP/s, NULL
--   attainable_dram      FLOP/s = min(peak, AI * W_DRAM)
--   attainable_flops_per_s  FLOP/s, = attainable_dram
--   fraction_of_roof     achieved / attainable
--   zero_flops           the point has no FLOPs (copies, casts)
--   bound                DRAM | the roof's name | NULL
--   levels_without_roof  levels with bytes but no roof
--   above_roof           achieved exceeds attainable by more than 0.1 %
--   flags                ['ops_without_flops'] for a layer some of whose ops have no rule, else []
--   ops                  carrying ops behind the point
--   ops_without_flops    ops of the layer without a FLOP rule (grain layer; 0 for an op)
--   dtype                the dtype of the roof
--   time_source          how duration_ns was measured
--   bytes_compulsory     byte, = bytes_dram (modelled compulsory bytes)
--   launches             GPU kernel launches behind the point (NULL on a run without GPU kernels)
--   calls                carrying ops behind the point (1 for an op)
--   steps                1: a trace's ops are taken as recorded, not per step
WITH r AS (
    SELECT o.*, coalesce(g.domain, 'torch') AS domain, k.nvtx_stack  -- (a CUDA-graph replayed op has no range)
    FROM op_roofline($run_id, $launch_overhead_ns) AS o
    JOIN ops AS k ON k.run_id = o.run_id AND k.op_id = o.op_id
    LEFT JOIN ranges AS g ON g.run_id = k.run_id AND g.range_id = k.range_id
    WHERE o.run_id = $run_id
),
gpu_run AS (
    SELECT coalesce(n_kernels, 0) > 0 AS has_gpu FROM runs WHERE run_id = $run_id
),
op_level AS (
    SELECT
        op_id AS kernel_id, op_name || ' ' || coalesce(input_dims, '') AS name, op_name AS short_name,
        coalesce(module_path, array_to_string(nvtx_stack, '/')) AS nvtx_path, time_ns::DOUBLE AS duration_ns, flops,
        bytes, peak_flops_per_s, peak_ceiling, bw_dram, dtype, 1 AS ops, 0 AS ops_without_flops,
        CASE WHEN (SELECT has_gpu FROM gpu_run) THEN kernels END AS launches,
        CASE WHEN gpu_time_ns IS NOT NULL THEN 'measured: GPU time of the kernels launched under the op'
            ELSE 'measured: the op''s CPU time' END AS time_source
    FROM r
    WHERE $grain = 'op' AND flops IS NOT NULL AND NOT (flops = 0 AND coalesce(bytes, 0) = 0)
),
in_layer AS (
    SELECT *, nvtx_layer(domain, nvtx_stack, $depth) AS layer FROM r WHERE $grain = 'layer'
        AND len(nvtx_stack) >= $depth
),
layer_dtype AS (
    SELECT layer, arg_max(peak_ceiling, coalesce(flops, 0)) AS peak_ceiling, arg_max(dtype, coalesce(flops, 0)) AS dtype,
        arg_max(peak_flops_per_s, coalesce(flops, 0)) AS peak_flops_per_s
    FROM in_layer WHERE flops IS NOT NULL GROUP BY layer
),
kernel_time AS (
    SELECT layer, sum(kernel_time_ns)::DOUBLE AS kernel_time_ns, sum(launches)::BIGINT AS launches
    FROM layer_summary WHERE run_id = $run_id AND depth = $depth GROUP BY layer
),
layer_level AS (
    SELECT
        dense_rank() OVER (ORDER BY l.layer) - 1 AS kernel_id, l.layer AS name, l.layer AS short_name,
        l.layer AS nvtx_path,
        CASE WHEN (SELECT has_gpu FROM gpu_run) THEN any_value(t.kernel_time_ns)
            ELSE sum(l.time_ns) FILTER (WHERE l.flops IS NOT NULL)::DOUBLE END AS duration_ns,
        sum(l.flops) AS flops,
        sum(l.bytes)::DOUBLE AS bytes,
        any_value(d.peak_flops_per_s) AS peak_flops_per_s, any_value(d.peak_ceiling) AS peak_ceiling,
        any_value(l.bw_dram) AS bw_dram, any_value(d.dtype) AS dtype,
        count(*) FILTER (WHERE l.flops IS NOT NULL) AS ops,
        count(*) FILTER (WHERE starts_with(l.flops_source, 'none:')) AS ops_without_flops,
        CASE WHEN (SELECT has_gpu FROM gpu_run) THEN any_value(t.launches) END AS launches,
        CASE WHEN (SELECT has_gpu FROM gpu_run) THEN 'measured: GPU kernel time under the layer'
            ELSE 'measured: CPU time of the layer''s ops' END AS time_source
    FROM in_layer AS l
    LEFT JOIN layer_dtype AS d USING (layer)
    LEFT JOIN kernel_time AS t USING (layer)
    GROUP BY l.layer
    HAVING sum(l.flops) IS NOT NULL
),
p AS (
    SELECT *, nullif(flops, 0) / nullif(bytes, 0) AS ai_dram, flops * 1e9 / nullif(duration_ns, 0) AS achieved
    FROM (SELECT * FROM op_level UNION ALL SELECT * FROM layer_level)
)
SELECT
    $run_id AS run_id, kernel_id, name, short_name, nvtx_path,
    CASE WHEN starts_with(peak_ceiling, 'TENSOR') THEN 'tensor' WHEN peak_ceiling = 'FP64' THEN 'fp64'
        WHEN peak_ceiling = 'FP32' THEN 'fp32' WHEN peak_ceiling IN ('FP16', 'BF16') THEN 'fp16'
        WHEN dtype = 'float64' THEN 'fp64' WHEN dtype = 'float32' THEN 'fp32' ELSE 'fp16' END AS precision,
    true AS is_dominant, duration_ns, flops,
    NULL::DOUBLE AS bytes_l1, NULL::DOUBLE AS bytes_l2, bytes::DOUBLE AS bytes_dram,
    NULL::DOUBLE AS ai_l1, NULL::DOUBLE AS ai_l2, ai_dram,
    achieved AS achieved_flops_per_s, peak_flops_per_s, peak_ceiling,
    NULL::DOUBLE AS bw_l1, NULL::DOUBLE AS bw_l2, bw_dram,
    NULL::DOUBLE AS ridge_l1, NULL::DOUBLE AS ridge_l2, peak_flops_per_s / nullif(bw_dram, 0) AS ridge_dram,
    NULL::DOUBLE AS attainable_l1, NULL::DOUBLE AS attainable_l2,
    attainable(peak_flops_per_s, ai_dram, bw_dram) AS attainable_dram,
    attainable(peak_flops_per_s, ai_dram, bw_dram) AS attainable_flops_per_s,
    achieved / nullif(attainable(peak_flops_per_s, ai_dram, bw_dram), 0) AS fraction_of_roof,
    coalesce(flops, 0) = 0 AS zero_flops,
    roof_bound(attainable(peak_flops_per_s, ai_dram, bw_dram), peak_flops_per_s, peak_ceiling, NULL,
        attainable(peak_flops_per_s, ai_dram, bw_dram), flops) AS bound,
    levels_without_roof(NULL, NULL, NULL, NULL, bytes, bw_dram) AS levels_without_roof,
    above_roof(achieved, attainable(peak_flops_per_s, ai_dram, bw_dram)) AS above_roof,
    CASE WHEN ops_without_flops > 0 THEN ['ops_without_flops'] ELSE [] END::VARCHAR[] AS flags,
    ops, ops_without_flops, dtype, time_source, bytes AS bytes_compulsory, launches, ops AS calls, 1 AS steps
FROM p
ORDER BY kernel_id
