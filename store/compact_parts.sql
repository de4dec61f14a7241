-- compact_parts: the runs `rl compact` folds in from their partitions (store/compact.py), one row each; the rows
-- of these runs in merged compacted files are stale (compact_from_compacted.sql skips them).
-- Parameters: $runs (run ids).
-- Columns:
--   run_id  the run's id
CREATE OR REPLACE TEMP TABLE __compact_parts AS
SELECT unnest($runs::VARCHAR[]) AS run_id
