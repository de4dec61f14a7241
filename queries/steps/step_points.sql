-- step_points: the roofline points of a trace run's LLM serving steps (query steps: each step's modelled work from
-- its ops, its measured GPU time), in the columns of layer_roofline so that the roofline chart draws them: one
-- point per step with FLOPs, named by its phase and batch makeup (prefill 9 req 8155 tok + decode 37 req). Bytes are
-- the compulsory bytes, drawn at DRAM; the roofs are op_roofline's (the datasheet's DRAM bandwidth, the roof of the
-- dtype carrying most of the step's FLOPs).
-- Parameters: $run_id, $launch_overhead_ns = 1000.
-- Columns:
--   run_id               run
--   kernel_id            the step's step_id, not a kernel
--   name                 'step <id> <phase> <makeup>'
--   short_name           the phase (unknown: the format says none)
--   nvtx_path            the step range's name
--   precision            fp64 | fp32 | fp16 | tensor: the pipe of the roof
--   is_dominant          true (one precision per point)
--   duration_ns          ns, GPU time of the kernels launched under the step (measured)
--   flops                FLOP, modelled
--   bytes_l1             byte, NULL
--   bytes_l2             byte, NULL
--   bytes_dram           byte, modelled compulsory bytes
--   ai_l1                FLOP/byte, NULL
--   ai_l2                FLOP/byte, NULL
--   ai_dram              FLOP/byte = flops / bytes_dram
--   achieved_flops_per_s FLOP/s = flops / duration
--   peak_flops_per_s     FLOP/s, the roof
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
--   zero_flops           false (steps without FLOPs are left out)
--   bound                DRAM | the roof's name | NULL
--   levels_without_roof  levels with bytes but no roof
--   above_roof           achieved exceeds attainable by more than 0.1 %
--   flags                ['ops_without_flops'] for a step some of whose ops have no FLOP rule, else []
--   ops                  ops carrying FLOPs under the step
--   ops_without_flops    ops under the step without a FLOP rule
--   dtype                NULL (a step mixes dtypes; its roof is named by peak_ceiling)
--   time_source          how duration_ns was measured
--   bytes_compulsory     byte, = bytes_dram
--   launches             GPU kernels launched under the step
--   calls                ops carrying FLOPs under the step
--   steps                1
WITH s AS (
    SELECT * FROM steps($run_id, $launch_overhead_ns) WHERE flops IS NOT NULL
)
SELECT
    run_id, step_id AS kernel_id,
    'step ' || step_id || ' ' || coalesce(phase, format) || coalesce(' ' || CASE
        WHEN phase = 'prefill' THEN prefill_requests || ' req ' || coalesce(prefill_tokens || ' tok', '')
        WHEN phase = 'decode' THEN decode_requests || ' req'
        WHEN phase = 'mixed' THEN prefill_requests || '+' || decode_requests || ' req'
    END, '') AS name,
    coalesce(phase, 'unknown') AS short_name, name AS nvtx_path,
    CASE WHEN starts_with(peak_ceiling, 'TENSOR') THEN 'tensor' WHEN peak_ceiling = 'FP64' THEN 'fp64'
        WHEN peak_ceiling = 'FP32' THEN 'fp32' ELSE 'fp16' END AS precision,
    true AS is_dominant, gpu_time_ns AS duration_ns, flops,
    NULL::DOUBLE AS bytes_l1, NULL::DOUBLE AS bytes_l2, bytes AS bytes_dram,
    NULL::DOUBLE AS ai_l1, NULL::DOUBLE AS ai_l2, ai AS ai_dram,
    flops_per_s AS achieved_flops_per_s, peak_flops_per_s, peak_ceiling,
    NULL::DOUBLE AS bw_l1, NULL::DOUBLE AS bw_l2, bw_dram,
    NULL::DOUBLE AS ridge_l1, NULL::DOUBLE AS ridge_l2, peak_flops_per_s / nullif(bw_dram, 0) AS ridge_dram,
    NULL::DOUBLE AS attainable_l1, NULL::DOUBLE AS attainable_l2,
    attainable_flops_per_s AS attainable_dram, attainable_flops_per_s,
    flops_per_s / nullif(attainable_flops_per_s, 0) AS fraction_of_roof,
    false AS zero_flops, bound,
    levels_without_roof(NULL, NULL, NULL, NULL, bytes, bw_dram) AS levels_without_roof,
    above_roof(flops_per_s, attainable_flops_per_s) AS above_roof,
    CASE WHEN ops_without_flops > 0 THEN ['ops_without_flops'] ELSE [] END::VARCHAR[] AS flags,
    ops, ops_without_flops, NULL::VARCHAR AS dtype,
    'measured: GPU time of the kernels launched under the step' AS time_source,
    bytes AS bytes_compulsory, kernels AS launches, ops AS calls, 1 AS steps
FROM s
ORDER BY step_id
