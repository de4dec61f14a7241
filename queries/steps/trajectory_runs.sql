-- trajectory_runs: the runs that carry label $vary and every pair $label_keys[i] = $label_values[i], with their
-- value of $vary and their series (macro label_series: the other labels).
-- Parameters: $vary, $label_keys, $label_values.
-- Columns:
--   run_id               run
--   value                its value of label $vary (text)
--   series               its other labels as 'k1=v1, k2=v2'
SELECT run_id, labels[$vary] AS value, label_series(labels, $vary) AS series
FROM runs
WHERE labels[$vary] IS NOT NULL AND has_labels(labels, $label_keys, $label_values)
ORDER BY run_id
