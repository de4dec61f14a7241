-- previous_run: for each given run, the latest run ingested before it with the same labels (runs without labels
-- have no previous run): what a report compares a run with.
-- Parameters: $run_ids.
-- Columns:
--   run_id               run
--   previous_run_id      the previous run of the same labels (NULL when none)
SELECT
    me.run_id,
    (
        SELECT r.run_id FROM runs AS r
        WHERE r.run_id <> me.run_id AND cardinality(me.labels) > 0 AND r.labels = me.labels
            AND r.ingested_at < me.ingested_at
        ORDER BY r.ingested_at DESC
        LIMIT 1
    ) AS previous_run_id
FROM runs AS me
WHERE list_contains($run_ids::VARCHAR[], me.run_id)
ORDER BY me.run_id
