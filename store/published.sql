-- published: the runs a store's views show, one row each, and where each one's rows live (read_branch.sql).
-- Parameters: $runs (the run ids, joined by '/': no run id holds one), $sources (for each, 'partition' or
-- 'compacted', joined by '/' in the same order). Empty texts: no row.
-- Columns:
--   run_id  the run's id
--   source  'partition' (STORE/<table>/run_id=<id>/part-0.parquet) or 'compacted' (STORE/<table>/compacted/)
CREATE OR REPLACE TABLE __published AS
SELECT
    unnest(string_split(nullif($runs, ''), '/')) AS run_id,
    unnest(string_split(nullif($sources, ''), '/')) AS source
