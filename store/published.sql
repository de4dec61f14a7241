-- published: the runs a store's views show, one row each, and where each one's rows live (read_branch.sql).
-- Parameters: $runs (run ids), $sources (for each, 'partition' or 'compacted').
-- Columns:
--   run_id  the run's id
--   source  'partition' (STORE/<table>/run_id=<id>/part-0.parquet) or 'compacted' (STORE/<table>/compacted/)
CREATE OR REPLACE TABLE __published AS
SELECT unnest($runs) AS run_id, unnest($sources) AS source
