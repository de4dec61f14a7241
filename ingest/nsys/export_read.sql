-- export_read: the columns the reader needs from one table of an SQLite export (SQLite, through ADBC;
-- rooflake.ingest.nsys_export).
-- Template slots (filled by Python: identifiers cannot be bound parameters): {table} = the table's name, quoted;
-- {columns} = the reader's columns present in it: an integer column as stored, `"<source>" AS "<ours>"` (ADBC types
-- it from the first rows and refuses another type after: nsys_export._integers), a text column
-- `CAST("<source>" AS TEXT) AS "<ours>"` (text after NULLs would not fit the type ADBC gave them), and `rowid`
-- where the reader keeps it.
-- Columns: those of {columns} (the source's column table in rooflake.ingest.nsys_export).
SELECT {columns} FROM {table}
