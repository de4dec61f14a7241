-- drop_plan_view: remove a planning view (plan_view.sql), so the store view of the same name is seen again.
-- Template slot (filled by Python): {table} = a table name of rooflake.schema.TABLES.
-- Columns: none.
DROP VIEW IF EXISTS temp.{table}
