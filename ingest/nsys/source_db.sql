-- source_db: the database the export's source tables are loaded into (rooflake.ingest.nsys_sqlite.load): a file in
-- the reader's temporary folder, so that DuckDB compresses the rows as it writes them and can drop their blocks
-- from memory without writing them again (at 1.2M kernels and 5.7M NVTX ranges the three big tables take 169 MB
-- there instead of 750 MB in memory, most of it spilled; an in-memory database with COMPRESS took 57 MB but its
-- CHECKPOINT re-reads and compresses the spilled rows: +4 CPU s).
-- Template slots (filled by Python: names cannot be bound parameters): {db} = the database's name; {file} = its
-- file, an SQL string literal.
-- Columns: none (statements only).
ATTACH {file} AS {db}
