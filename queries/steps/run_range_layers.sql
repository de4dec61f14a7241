-- run_range_layers: the range_times rows of one run at one NVTX depth (the layers of a run without GPU kernels: a
-- CPU run of a model wrapped in rooflake.instrument.annotate, timed by its push/pop ranges), optionally only the
-- layers matching a regular expression (DuckDB regexp_matches: a partial match) and only the ranges of one NVTX
-- domain ($domain; NULL: every domain), by inclusive time.
-- Parameters: $run_id, $depth, $match, $domain = NULL.
-- Columns:
--   range_times.*        every column of range_times, in its order
SELECT *
FROM range_times
WHERE run_id = $run_id
    AND depth = $depth
    AND ($match::VARCHAR IS NULL OR regexp_matches(layer, $match::VARCHAR))
    AND ($domain::VARCHAR IS NULL OR domain = $domain::VARCHAR)
ORDER BY inclusive_ns DESC, layer
