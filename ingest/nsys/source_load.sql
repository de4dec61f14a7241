-- source_load: create the DuckDB table that holds one source of the export (rooflake.ingest.nsys_sqlite.load),
-- from its first part read through ADBC (an empty Arrow table with the read columns, or a placeholder when the
-- export lacks the table); nsys/source_append.sql adds the rest, one batch at a time. Not a TEMP table: the
-- biggest source is loaded on a second cursor of the same database.
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {table} = the table
-- made (<source>_src); {batch} = the name the Arrow part is registered under; {columns} = the typed select list
-- over it (alias a), from the reader's column tables (rooflake.ingest.nsys_export.select_batches).
-- Columns: those of {columns} (see rooflake.ingest.nsys_export: the source's column table).
CREATE TABLE {table} AS SELECT {columns} FROM {batch} AS a
