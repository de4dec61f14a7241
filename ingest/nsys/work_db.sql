-- work_db: the database the attribution's big working tables go to (rooflake.ingest.nsys_sqlite.connect): a file in
-- the reader's temporary folder, so that DuckDB compresses their rows as it writes them and can drop their blocks
-- from memory without spilling them (TEMP tables stay in memory, uncompressed, and spill beyond the memory limit).
-- Unqualified CREATE TABLE goes there; TEMP tables and views are found first as before.
-- Template slot (filled by Python: a file path cannot be a bound parameter in ATTACH): {file} = the file, an SQL
-- string literal.
-- Columns: none (statements only).
ATTACH {file} AS work;
SET search_path = 'work.main,memory.main';
