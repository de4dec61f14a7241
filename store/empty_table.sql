-- empty_table: a table of the store that has no file yet, declared in DDL with its columns (Store.connect):
-- registering an empty Arrow table instead costs 0.17 s the first time, most of a cold `rl sql`.
-- Template slots (filled by Python): {table} = a table name of rooflake.schema.TABLES; {columns} = its column
-- definitions ("name" TYPE, ...; rooflake.schema.duck.duck_type).
-- Columns: those of the table (rooflake.schema.TABLES), no rows.
CREATE TABLE __empty_{table} ({columns});
CREATE VIEW {table} AS SELECT * FROM __empty_{table}
