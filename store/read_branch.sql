-- read_branch: one source of a store table's view (table_view.sql): the rows of a list of Parquet files whose run is
-- published from that kind of file (the compacted files while they hold a run not published from them:
-- database.Sources.mixed; other files are read as they are, read_files.sql). `__published` (published.sql) names
-- each published run once, with where its rows live: 'partition' (its runs/run_id=<id>/ file exists) or
-- 'compacted' (only in the compacted files of compacted.json), so a run re-ingested with --force after a
-- compaction is read from its partitions only, data of a run being published (no runs file yet) is not read, and
-- no run is read twice. The inner join with a distinct
-- list (not `IN (subquery)`) lets DuckDB push a `run_id = 'X'` filter into the file scan.
-- Template slots (filled by Python): {files} = the list of quoted paths or URLs (rooflake.schema.duck.sql_str);
-- {source} = 'partition' or 'compacted'; {union} = true, or false when the first file has every declared column
-- (a file lacking one then fails the query, which is run again with true: database.Database.widen).
-- Columns: those of the files (union by name), `run_id` included.
UNION ALL BY NAME
SELECT f.* FROM read_parquet({files}, union_by_name = {union}, hive_partitioning = false) AS f
JOIN (SELECT run_id FROM __published WHERE source = '{source}') AS p ON f.run_id = p.run_id
