-- conform: one of the reader's output views as exactly its store table's columns (rooflake.ingest.nsys_sqlite, for
-- rooflake.schema.duck.DuckTable).
-- Template slots (filled by Python: a view's name and a select list cannot be bound parameters): {view} = an output
-- view of output.sql; {columns} = rooflake.schema.duck.conform_select of the table's schema over the view's columns
-- (each cast to the schema's type, the others NULL) and the run id as a literal.
-- Columns: those of the table's schema (rooflake.schema.tables), in order.
SELECT {columns} FROM {view}
