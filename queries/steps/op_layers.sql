-- op_layers: the modelled work of a trace run's recorded ops per NVTX layer at $depth, labelled as layer_summary
-- labels kernels (nvtx_layer over the op's domain and range stack, the op's own range included, so an op outside
-- every enclosing range is its own layer): the sum of the FLOPs and compulsory bytes of the ops that carry their
-- chain's work (each op once: ops.flops is NULL on the ops counted in another), and the ops without a FLOP rule.
-- Every number here is modelled from the recorded shapes (rooflake.instrument.shapes).
-- Parameters: $run_id, $depth.
-- Columns:
--   layer               domain:outer/.../name at this depth (layer_summary.layer)
--   ops_modelled        recorded ops under the layer that carry FLOPs
--   ops_without_flops   recorded ops under the layer without a FLOP rule (flops_source 'none: ...')
--   flops_modelled      FLOP, modelled: sum of the carrying ops' FLOPs
--   bytes_modelled      byte, modelled: sum of their compulsory bytes
--   ai_modelled         FLOP/byte = flops_modelled / bytes_modelled
SELECT
    nvtx_layer(r.domain, o.nvtx_stack, $depth) AS layer,
    count(o.flops) AS ops_modelled,
    count(*) FILTER (WHERE starts_with(o.flops_source, 'none:')) AS ops_without_flops,
    sum(o.flops) AS flops_modelled,
    sum(o.bytes)::DOUBLE AS bytes_modelled,
    nullif(sum(o.flops), 0) / nullif(sum(o.bytes) FILTER (WHERE o.flops IS NOT NULL), 0) AS ai_modelled
FROM ops AS o
JOIN ranges AS r ON r.run_id = o.run_id AND r.range_id = o.range_id
WHERE o.run_id = $run_id
GROUP BY ALL
ORDER BY layer
