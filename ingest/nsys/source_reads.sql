-- source_reads: how the attribution's connection reads the source tables' Parquet files (rooflake.ingest.nsys_sqlite
-- writes them into its temporary folder; rooflake.ingest.nsys_parquet reads an export's own; both connect through
-- nsys_sqlite.connect). Each scanning thread reads one column chunk at a time instead of a whole row group at once
-- (one allocation per thread, under the one memory limit beside the attribution's hash tables). Measured at the x8
-- copy while the files' integer columns were plain (~11 MB per row group of the kernels): with prefetching,
-- DuckDB's default, the whole ingest peaked at 492-549 MiB and once ran out of memory at 300 MB ("could not
-- allocate block of size 10.0 MiB"); without it, 476-485 MiB in every run.
-- The setting belongs to DuckDB's Parquet extension, which it loads here (a connection's config cannot set it).
-- Columns: none (settings only).
SET disable_parquet_prefetching = true;
