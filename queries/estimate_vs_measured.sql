-- estimate_vs_measured: per NVTX layer of a measured run annotated with rooflake.instrument.annotate (ranges
-- `forward`/`backward` > module paths, e.g. rooflake:forward/layer3/layer3.1/layer3.1.conv2), the measured FLOPs,
-- bytes and time beside the analytic FLOPs and the modelled bytes of an `rl estimate` run of the same model (rows
-- of `estimates` placed on the same NVTX stack: phase, then every prefix of the module path). Executed / algorithmic
-- FLOPs differ for Winograd/FFT convolutions, Tensor-Core counting conventions or ops a counter misses; measured /
-- modelled bytes for cache reuse the model does not see. Gaps over 10 % are flagged with their likely cause.
-- $match (a regular expression: DuckDB regexp_matches, a partial match) keeps the layers it matches; $device keeps
-- the kernels of that CUDA device only (the estimates stay the whole model's). NULL: every layer, every device.
-- Parameters: $run_id, $estimates_run_id, $depth = 2, $domain = 'rooflake', $match = NULL, $device = NULL.
-- Columns:
--   layer                 domain:forward|backward/module/... at NVTX depth $depth (nvtx_layer)
--   kernels               measured kernel launches under the layer (0: no kernel matched)
--   ops                   estimated ops under the layer (0: no estimate matched)
--   duration_ns           ns, measured: sum of the kernels' durations
--   flops_measured        FLOP, measured: sum of every precision's counted FLOPs (NULL: no counters)
--   flops_analytic        FLOP, modelled: sum of the estimates' FLOPs (ops without a formula left out)
--   flops_ratio           flops_measured / flops_analytic (executed / algorithmic)
--   bytes_dram_measured   byte, measured
--   bytes_dram_modelled   byte, modelled (DeLTA-style; NULL for ops without a traffic model or GPU)
--   bytes_compulsory      byte, modelled: every op's inputs, weights and outputs once
--   dram_ratio            bytes_dram_measured / bytes_dram_modelled
--   bytes_l2_measured     byte, measured
--   bytes_l2_modelled     byte, modelled
--   l2_ratio              bytes_l2_measured / bytes_l2_modelled
--   gaps                  list of the gaps over 10 %, each with its likely cause
WITH m AS (
    SELECT
        nvtx_layer(nvtx_domain, nvtx_stack, $depth) AS layer,
        count(*) AS kernels,
        sum(duration_ns) AS duration_ns,
        sum(coalesce(flops_fp64, 0) + coalesce(flops_fp32, 0) + coalesce(flops_fp16, 0) + coalesce(flops_tensor, 0))
            FILTER (WHERE coalesce(flops_fp64, flops_fp32, flops_fp16, flops_tensor) IS NOT NULL) AS flops_measured,
        sum(bytes_dram) AS bytes_dram_measured,
        sum(bytes_l2) AS bytes_l2_measured
    FROM kernels
    WHERE run_id = $run_id AND nvtx_domain = $domain AND ($device::BIGINT IS NULL OR device_id = $device::BIGINT)
    GROUP BY ALL
),
e0 AS (
    SELECT
        *,
        list_prepend(
            phase,
            CASE WHEN module_path = '' THEN []::VARCHAR[] ELSE list_transform(
                range(1, len(string_split(module_path, '.')) + 1),
                lambda i: array_to_string(string_split(module_path, '.')[1:i], '.')
            ) END
        ) AS stack
    FROM estimates
    WHERE run_id = $estimates_run_id
),
e AS (
    SELECT
        nvtx_layer($domain, stack, $depth) AS layer,
        count(*) AS ops,
        sum(flops) AS flops_analytic,
        sum(bytes_dram) AS bytes_dram_modelled,
        sum(bytes_compulsory)::BIGINT AS bytes_compulsory,
        sum(bytes_l2) AS bytes_l2_modelled
    FROM e0
    GROUP BY ALL
),
j AS (
    SELECT
        coalesce(m.layer, e.layer) AS layer,
        coalesce(m.kernels, 0) AS kernels,
        coalesce(e.ops, 0) AS ops,
        m.duration_ns,
        m.flops_measured,
        e.flops_analytic,
        m.flops_measured / nullif(e.flops_analytic, 0) AS flops_ratio,
        m.bytes_dram_measured,
        e.bytes_dram_modelled,
        e.bytes_compulsory,
        m.bytes_dram_measured / nullif(e.bytes_dram_modelled, 0) AS dram_ratio,
        m.bytes_l2_measured,
        e.bytes_l2_modelled,
        m.bytes_l2_measured / nullif(e.bytes_l2_modelled, 0) AS l2_ratio
    FROM m FULL JOIN e USING (layer)
)
SELECT
    *,
    list_filter([
        CASE WHEN kernels = 0 THEN 'no measured kernel under this layer (not profiled, or fused into another)' END,
        CASE WHEN ops = 0 THEN 'no estimate for this layer (module path not in the model traced)' END,
        flops_gap(flops_ratio),
        CASE WHEN dram_ratio > 1.1 THEN 'DRAM: more than modelled (L2 thrashing, spills, extra passes)' END,
        CASE WHEN dram_ratio < 0.9 THEN 'DRAM: less than modelled (reuse across layers in L2)' END,
        CASE WHEN l2_ratio > 1.1 THEN 'L2: more than modelled (smaller tiles than assumed, L1 misses)' END,
        CASE WHEN l2_ratio < 0.9 THEN 'L2: less than modelled (larger tiles or more L1 reuse than assumed)' END
    ], lambda x: x IS NOT NULL) AS gaps
FROM j
WHERE $match::VARCHAR IS NULL OR regexp_matches(layer, $match::VARCHAR)
ORDER BY layer
