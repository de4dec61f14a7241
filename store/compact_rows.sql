-- compact_rows: every row a store table's view shows (published runs, each from where it lives), sorted by run,
-- for `rl compact` to write into one file (store/compact.py).
-- Template slot (filled by Python): {table} = a table name of rooflake.schema.TABLES.
-- Columns: those of the table (rooflake.schema.TABLES), `run_id` first.
SELECT * FROM {table} ORDER BY run_id
