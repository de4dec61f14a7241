-- source_db: the in-memory database the export's source tables are loaded into (rooflake.ingest.nsys_sqlite.load),
-- compressed (COMPRESS: each table is compressed by the CHECKPOINT of nsys/source_compress.sql after it is loaded;
-- at 1.2M kernels and 5.7M NVTX ranges, the three big tables take 57 MB instead of 750 MB, most of it spilled).
-- Template slot (filled by Python: a name cannot be a bound parameter): {db} = the database's name.
-- Columns: none (statements only).
ATTACH ':memory:' AS {db} (COMPRESS)
