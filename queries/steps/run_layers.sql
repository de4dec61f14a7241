-- run_layers: the layer_summary rows of one run at one NVTX depth, optionally only layers matching a regular
-- expression (DuckDB regexp_matches: a partial match), only one CUDA device and only one NVTX domain ($domain: the
-- layers named `domain:...`; NULL: every domain).
-- Parameters: $run_id, $depth, $match, $device, $domain = NULL.
-- Columns:
--   layer_summary.*      every column of layer_summary, in its order
SELECT *
FROM layer_summary
WHERE run_id = $run_id
    AND depth = $depth
    AND ($match::VARCHAR IS NULL OR regexp_matches(layer, $match::VARCHAR))
    AND ($device::BIGINT IS NULL OR device_id = $device::BIGINT)
    AND ($domain::VARCHAR IS NULL OR starts_with(layer, $domain::VARCHAR || ':'))
