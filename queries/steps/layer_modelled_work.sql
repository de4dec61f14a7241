-- layer_modelled_work: a trace run's layers (rows of layer_summary or range_times, given as `layer_rows`) beside
-- the modelled work of its recorded ops per layer (step op_layers, given as `op_layer_rows`), one row per layer
-- row in its order. Where the layer also has counted FLOPs (an ncu run of the same program: `rl layers RUN --with
-- NCU_RUN`), the cross-check: counted / modelled FLOPs and the likely cause of a gap over 10 % (macro flops_gap,
-- as estimate_vs_measured flags the analytic FLOPs of an `rl estimate` run).
-- Given: layer_rows, op_layer_rows.
-- Columns:
--   position              BIGINT    -       the layer row's index in layer_rows (the rows come in its order)
--   flops_modelled        DOUBLE    FLOP    modelled from the recorded shapes: each op counted once (op_layers)
--   bytes_modelled        DOUBLE    byte    modelled: compulsory bytes of the ops carrying FLOPs
--   ai_modelled           DOUBLE    FLOP/byte = flops_modelled / bytes_modelled
--   flops_per_s_modelled  DOUBLE    FLOP/s  = flops_modelled / the layer's measured time (layer_rows.time_ns)
--   ops_without_flops     BIGINT    -       recorded ops under the layer without a FLOP rule
--   flops_ratio           DOUBLE    1       counted (ncu) / modelled FLOPs; NULL without counters on every launch of
--                                           the layer (layer_rows.counters_complete) or without modelled FLOPs
--   gaps                  VARCHAR[] -       the gaps over 10 % with their likely cause; NULL without counters
WITH j AS (
    SELECT
        l.*,
        o.flops_modelled,
        o.bytes_modelled,
        o.ai_modelled,
        o.ops_without_flops,
        CASE WHEN l.counters_complete THEN l.flops / nullif(o.flops_modelled, 0) END AS flops_ratio
    FROM layer_rows AS l
    LEFT JOIN op_layer_rows AS o USING (layer)
)
SELECT
    position::BIGINT AS position,
    flops_modelled,
    bytes_modelled,
    ai_modelled,
    flops_modelled * 1e9 / nullif(time_ns, 0) AS flops_per_s_modelled,
    ops_without_flops,
    flops_ratio,
    CASE WHEN flops IS NOT NULL THEN list_filter([
        CASE WHEN NOT counters_complete THEN 'FLOPs: counters cover only part of the launches (no ratio)' END,
        CASE WHEN flops_modelled IS NULL THEN 'no recorded op with a FLOP rule under this layer' END,
        flops_gap(flops_ratio)
    ], lambda x: x IS NOT NULL) END AS gaps
FROM j
ORDER BY position
