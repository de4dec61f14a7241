-- empty_table: the typed, empty stand-in of one store table (database.build): every view of the table unions its
-- files with it BY NAME, so a column no file has yet reads as NULL with its declared type, and the query planner
-- plans a one-run query on it (database.plan_runs) before any file is bound.
-- Template slots (filled by Python): {table} = a table name of rooflake.schema.TABLES; {columns} = its column
-- definitions ("name" TYPE, ...; rooflake.schema.duck.duck_type).
-- Columns: those of the table (rooflake.schema.TABLES), no rows.
CREATE TABLE __empty_{table} ({columns})
