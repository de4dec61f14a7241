-- export_tables: every table of an SQLite export with its columns and their declared types (SQLite, through ADBC;
-- rooflake.ingest.nsys_export). Reading it is also the check that the file is a readable SQLite database.
-- Columns:
--   table_name    the table (or view)
--   column_name   one of its columns
--   declared      its declared type, upper case ('' when none)
SELECT CAST(m.name AS TEXT) AS table_name, CAST(p.name AS TEXT) AS column_name,
       CAST(upper(coalesce(p.type, '')) AS TEXT) AS declared
FROM sqlite_master AS m, pragma_table_info(m.name) AS p
WHERE m.type IN ('table', 'view')
