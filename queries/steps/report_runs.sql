-- report_runs: the runs a report covers, oldest first: ingested at $since or later, whose labels hold every pair
-- $label_keys[i] = $label_values[i] (macro has_labels).
-- Parameters: $since, $label_keys, $label_values.
-- Columns:
--   run_id               run
SELECT run_id
FROM runs
WHERE ingested_at >= $since AND has_labels(labels, $label_keys, $label_values)
ORDER BY ingested_at, run_id
