-- run_layers: the layer_summary rows of one run at one NVTX depth, optionally only layers matching a regular
-- expression (DuckDB regexp_matches: a partial match) and only one CUDA device.
-- Parameters: $run_id, $depth, $match, $device.
-- Columns:
--   layer_summary.*      every column of layer_summary, in its order
SELECT *
FROM layer_summary
WHERE run_id = $run_id
    AND depth = $depth
    AND ($match::VARCHAR IS NULL OR regexp_matches(layer, $match::VARCHAR))
    AND ($device::BIGINT IS NULL OR device_id = $device::BIGINT)
