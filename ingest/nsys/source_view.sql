-- source_view: one table of the export as the attribution reads it: a view over the source's table, which holds
-- its columns typed, the reader's columns that the export lacks as typed NULLs (rooflake.ingest.nsys_sqlite: a
-- DuckDB table filled by nsys/source_load.sql; or an empty Arrow table registered by
-- rooflake.ingest.nsys_parquet for a table a parquetdir export lacks).
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {view} = the source's
-- name (k_raw, nvtx_raw, ...); {arrow} = the table it reads; {columns} = the select list over it (alias a): `*`
-- over a loaded table, the typed select list from the reader's column tables over an Arrow one.
-- Columns: those of {columns} (see rooflake.ingest.nsys_export: the source's column table).
CREATE VIEW {view} AS SELECT {columns} FROM {arrow} AS a
