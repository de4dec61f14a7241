-- previous_run: for each run of a report, the latest run ingested before it with the same labels (runs without
-- labels have no previous run): what a report compares a run with. The runs are $run_ids, or when that is NULL the
-- runs report_runs selects (ingested at $since or later, whose labels hold every $label_keys[i] = $label_values[i]),
-- so one scan of the runs table gives a report both its runs and their previous runs. The runs table is read once
-- (materialized): every run's labels are needed, and a second scan of a 10,000-run store's runs files doubled the
-- cost.
-- Parameters: $run_ids, $since, $label_keys, $label_values.
-- Columns:
--   run_id               run (oldest first, as report_runs orders them)
--   previous_run_id      the previous run of the same labels (NULL when none)
WITH all_runs AS MATERIALIZED (
    SELECT run_id, labels, ingested_at FROM runs
),
me AS (
    SELECT run_id, labels, ingested_at
    FROM all_runs
    WHERE CASE
        WHEN $run_ids::VARCHAR[] IS NULL
            THEN ingested_at >= $since AND has_labels(labels, $label_keys, $label_values)
        ELSE list_contains($run_ids::VARCHAR[], run_id)
    END
)
SELECT
    me.run_id,
    (
        SELECT r.run_id FROM all_runs AS r
        WHERE r.run_id <> me.run_id AND cardinality(me.labels) > 0 AND r.labels = me.labels
            AND r.ingested_at < me.ingested_at
        ORDER BY r.ingested_at DESC
        LIMIT 1
    ) AS previous_run_id
FROM me
ORDER BY me.ingested_at, me.run_id
