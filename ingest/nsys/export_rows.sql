-- export_rows: the size of one table of an SQLite export in rows, from its largest rowid (no scan; SQLite, through
-- ADBC; rooflake.ingest.nsys_export).
-- Template slot (filled by Python: an identifier cannot be a bound parameter): {table} = the table's name, quoted.
-- Columns:
--   max_rowid   the largest rowid (NULL for an empty table)
SELECT max(rowid) AS max_rowid FROM {table}
