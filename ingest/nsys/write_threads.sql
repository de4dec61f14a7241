-- write_threads: DuckDB's threads while the output tables are streamed to pyarrow's Parquet writer
-- (rooflake.ingest.nsys_sqlite.outputs; the writes are the ingest's last step). One consumer drains each query's
-- Arrow stream, so more threads only compute further ahead: at the x8 copy, the kernels' write (its source a
-- Parquet file scanned by every thread, joined to the attribution's hash tables) peaked at 503-530 MiB of resident
-- memory in about half the runs with 4 threads, 462-475 MiB with 2, in no more time (5 paired runs: 0.97x wall).
-- Parameters: $threads (at most the connection's own count).
-- Columns: none (settings only).
SET threads = $threads;
