-- read_part: every value of one Parquet file of the store, decoded (Store.doctor reads each file with the engine
-- the views use, so a file it passes is one every query can read).
-- Parameters: $path (the file).
-- Columns: those of the file's table (rooflake.schema.TABLES).
SELECT * FROM read_parquet($path, hive_partitioning = false)
