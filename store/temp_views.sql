-- temp_views: the temporary views of a connection (a caller's stand-in for a store table, such as
-- queries.fetch's `tables=`, hides the store view: planning leaves such a table alone).
-- Columns:
--   view_name  the view's name
SELECT view_name FROM duckdb_views() WHERE temporary
