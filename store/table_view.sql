-- table_view: the view of one store table over its Parquet files (Store.connect).
-- Template slots (filled by Python: a view's name and a file list cannot be bound parameters):
--   {table} = a table name of rooflake.schema.TABLES; {files} = a quoted glob or list of quoted paths
--   (rooflake.schema.duck.sql_str). {where} = empty for `runs`; for a data table, the clause that keeps only runs
--   with a `runs` row (where_published.sql), so a half-published run is never seen.
-- Columns: those of the table (rooflake.schema.TABLES, units in the names), `run_id` included.
CREATE VIEW {table} AS
SELECT * FROM read_parquet({files}, hive_partitioning = false)
{where}
