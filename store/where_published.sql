-- where_published: the filter of a data table's view (table_view.sql): rows of published runs only.
-- Columns: none (a WHERE clause).
WHERE run_id IN (SELECT run_id FROM runs)
