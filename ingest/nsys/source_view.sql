-- source_view: one table of the export as the attribution reads it: a view over the Arrow table the reader read
-- through ADBC, every column typed, the reader's columns that the export lacks as typed NULLs
-- (rooflake.ingest.nsys_sqlite).
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {view} = the source's
-- name (k_raw, nvtx_raw, ...); {arrow} = the name the Arrow table is registered under; {columns} = the typed select
-- list over it (alias a), from the reader's column tables.
-- Columns: those of {columns} (see rooflake.ingest.nsys_export: the source's column table).
CREATE VIEW {view} AS SELECT {columns} FROM {arrow} AS a
