-- source_drop: drop the table of one source of the export once the attribution no longer needs it (its view is
-- dropped by the step that used it last; rooflake.ingest.nsys_sqlite).
-- Template slot (filled by Python: a name cannot be a bound parameter): {table} = the source's table (<db>.<source>_src).
-- Columns: none (statements only).
DROP TABLE {table}
