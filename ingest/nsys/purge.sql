-- purge: make DuckDB's allocator give the memory it keeps (freed, still resident) back to the OS
-- (rooflake.ingest.nsys_export.purge, between the nsys reader's steps). DuckDB has no setting for it; changing the
-- thread count purges all of its allocator's arenas (Allocator::FlushAll when the task scheduler relaunches its
-- threads; measured with DuckDB 2.0): at 700k ranges, peak RSS 0.39 -> 0.37 GB, and the outputs are written from
-- 0.28 GB instead of 0.39 GB. Without that effect in a later DuckDB only memory is lost; the thread count is the
-- reader's again either way (RESET would give DuckDB's default: every core): kept in a variable meanwhile.
-- Columns: none (settings only).
SET VARIABLE rooflake_threads = current_setting('threads');
SET threads = 1;
SET threads = getvariable('rooflake_threads');
