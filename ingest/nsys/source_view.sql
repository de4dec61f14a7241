-- source_view: a source table the export lacks, as the attribution reads it: a view over an empty Arrow table
-- registered by the reader, every one of the source's columns a typed NULL (rooflake.ingest.nsys_sqlite and
-- rooflake.ingest.nsys_parquet; a source the export has is a view over its Parquet file, nsys/parquet_view.sql).
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {view} = the source's
-- name (k_raw, nvtx_raw, ...); {arrow} = the empty table it reads; {columns} = the typed select list from the
-- reader's column tables (alias a).
-- Columns: those of {columns} (see rooflake.ingest.nsys_export: the source's column table; nvtx_raw's end with
-- src_pos, NULL here).
CREATE VIEW {view} AS SELECT {columns} FROM {arrow} AS a
