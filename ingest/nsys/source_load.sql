-- source_load: the DuckDB table that holds one source of the export (rooflake.ingest.nsys_sqlite.load), loaded in
-- one statement from the stream of batches read through ADBC (or from a placeholder when the export lacks the
-- table). Not a TEMP table: the biggest source is loaded on a second cursor of the same database.
-- Template slots (filled by Python: names and a select list cannot be bound parameters): {table} = the table
-- made (<db>.<source>_src); {columns} = the typed select list over the stream registered as source_batches (alias a),
-- from the reader's column tables (rooflake.ingest.nsys_export.select_stream).
-- Columns: those of {columns} (see rooflake.ingest.nsys_export: the source's column table).
CREATE TABLE {table} AS SELECT {columns} FROM source_batches AS a
