-- lookup_distinct: a lookup table the export holds with exact copies of some rows (nsys/lookup_dups.sql), kept once:
-- its rows into a table, and its view replaced by one over that table (rooflake.ingest.nsys_sqlite.lookups).
-- Template slot (filled by Python: a view's name cannot be a bound parameter): {view} = strings or gpus.
-- Columns: none (statements only).
CREATE TEMP TABLE {view}_distinct AS SELECT DISTINCT * FROM {view};
CREATE OR REPLACE VIEW {view} AS SELECT * FROM {view}_distinct;
