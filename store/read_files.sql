-- read_files: one source of a store table's view (table_view.sql) whose files hold only rows of runs published
-- from them, read as they are: the partition files of the runs published as partitions (a partition file holds
-- its own run's rows, and database.Sources.files lists only those runs), or the compacted files when every run
-- they hold is published from them (database.Sources.mixed false). Else read_branch.sql joins with __published.
-- Template slots (filled by Python): {files} = the list of quoted paths or URLs (rooflake.schema.duck.sql_str);
-- {union} = true, or false when the first file has every declared column (a file lacking one then fails the
-- query, which is run again with true: database.Database.widen).
-- Columns: those of the files (union by name), `run_id` included.
UNION ALL BY NAME
SELECT * FROM read_parquet({files}, union_by_name = {union}, hive_partitioning = false)
