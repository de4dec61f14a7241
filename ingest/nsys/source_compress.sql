-- source_compress: compress the tables just loaded into a source database of nsys/source_db.sql (a CHECKPOINT of an
-- in-memory database with COMPRESS; rooflake.ingest.nsys_sqlite.load, after each table).
-- Template slot (filled by Python: a name cannot be a bound parameter): {db} = the database's name.
-- Columns: none (statements only).
CHECKPOINT {db}
