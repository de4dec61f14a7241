-- export_read: the columns the reader needs from one table of an SQLite export (SQLite, through ADBC;
-- rooflake.ingest.nsys_export).
-- Template slots (filled by Python: identifiers cannot be bound parameters): {table} = the table's name, quoted;
-- {columns} = the reader's columns present in it, each `CAST("<source>" AS INTEGER|TEXT) AS "<ours>"` (SQLite is
-- dynamically typed: the casts give ADBC one type per column), and `rowid` where the reader keeps it.
-- Columns: those of {columns} (the source's column table in rooflake.ingest.nsys_export).
SELECT {columns} FROM {table}
