-- compact_from_compacted: a branch of compact_rows.sql: the rows of compacted files being merged into a new
-- generation, except those of runs read from their partitions now (`__compact_parts`, compact_parts.sql: a run
-- re-ingested with --force since it was compacted), so no run is written twice.
-- Template slot (filled by Python): {files} = the list of quoted paths or URLs (rooflake.schema.duck.sql_str).
-- Columns: those of the files (union by name), `run_id` included.
UNION ALL BY NAME
SELECT f.* FROM read_parquet({files}, union_by_name = true, hive_partitioning = false) AS f
ANTI JOIN __compact_parts AS p ON f.run_id = p.run_id
