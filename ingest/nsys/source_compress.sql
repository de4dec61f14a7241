-- source_compress: checkpoint a source database of nsys/source_db.sql after a table is loaded into it
-- (rooflake.ingest.nsys_sqlite.load): its rows are in the database file, not in the write-ahead log.
-- Template slot (filled by Python: a name cannot be a bound parameter): {db} = the database's name.
-- Columns: none (statements only).
CHECKPOINT {db}
