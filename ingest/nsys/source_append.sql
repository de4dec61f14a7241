-- source_append: add one batch (64k rows) read through ADBC to the table of one source of the export, made by
-- nsys/source_load.sql (rooflake.ingest.nsys_sqlite.load).
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {table} = the source's
-- table (<source>_src); {batch} = the name the Arrow batch is registered under; {columns} = the typed select list
-- over it (alias a): the same columns and types as the table's, this batch's own _hex columns read or NULL
-- (rooflake.ingest.nsys_export.select_batches).
-- Columns: none (an insert).
INSERT INTO {table} SELECT {columns} FROM {batch} AS a
