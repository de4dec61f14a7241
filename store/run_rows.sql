-- run_rows: the rows one run holds in one store table, without its run_id column (rooflake.pipeline.tables:
-- whether a computed run about to be published again holds the same rows as the one in the store).
-- Template slot (filled by Python: an identifier cannot be a bound parameter): {table} = a store table's view.
-- Parameters: $run_id.
-- Columns: those of the table, run_id left out.
SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = $run_id
