-- failing_view: the view of a store table whose files DuckDB cannot bind (a damaged footer): it has the table's
-- columns, so other tables' views and queries still work, and any query reading its rows fails with the message
-- (which names the damaged file, as DuckDB reported it) instead of the whole store failing at connect.
-- Template slots (filled by Python): {table} = a table name of rooflake.schema.TABLES; {columns} = one
-- `CAST(error(<message>) AS <type>) AS "<name>"` per column (every column read raises); {message} = the message
-- as a quoted SQL string (rooflake.schema.duck.sql_literal).
-- Columns: those of the table (rooflake.schema.TABLES); reading any row raises the message.
CREATE OR REPLACE VIEW main.{table} AS
SELECT {columns} FROM (SELECT 1 AS one) AS o WHERE error({message}) IS NULL
