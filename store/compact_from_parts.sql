-- compact_from_parts: a branch of compact_rows.sql: every row of the partition files of the runs folded in now
-- (each run's committed file of this table; store/compact.py picks them: published runs only).
-- Template slot (filled by Python): {files} = the list of quoted paths or URLs (rooflake.schema.duck.sql_str).
-- Columns: those of the files (union by name), `run_id` included.
UNION ALL BY NAME
SELECT f.* FROM read_parquet({files}, union_by_name = true, hive_partitioning = false) AS f
