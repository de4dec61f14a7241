-- label_keys: every label key that some run of the store carries, sorted.
-- Columns:
--   key                  label key
SELECT DISTINCT unnest(map_keys(labels)) AS key FROM runs ORDER BY key
