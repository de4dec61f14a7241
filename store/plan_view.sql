-- plan_view: while a query is planned (database.plan_runs), a temporary view of a store table over its typed empty
-- stand-in (empty_table.sql), so DuckDB plans the query, pushing its run_id filters into the scans, without
-- binding a single file; dropped right after (drop_plan_view.sql). Only for a table whose view reads files now
-- (database.Database.plan: one reading no file is planned through itself); creating it fails when a temporary
-- view of the caller's has the name (that table is then planned as the caller's view reads it).
-- Template slot (filled by Python): {table} = a table name of rooflake.schema.TABLES.
-- Columns: those of the table (rooflake.schema.TABLES), no rows.
CREATE TEMP VIEW {table} AS SELECT * FROM __empty_{table}
