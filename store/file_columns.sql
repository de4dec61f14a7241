-- file_columns: the column names one Parquet file of the store holds (database.point reads one file's schema to
-- decide whether a table's files can be read without union_by_name: see database.Database.first_complete).
-- Parameters: $path (the file).
-- Columns:
--   name  a column (or nested field) name of the file
SELECT name FROM parquet_schema($path)
