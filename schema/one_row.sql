-- one_row: a one-row table of a schema built from SQL literals (schema.duck.duck_row).
-- Template slot (filled by Python): {columns} = the select list of schema.duck.conform_select over `r.one`, each
-- value `CASE WHEN r.one = 1 THEN <literal> END` so that DuckDB writes the column as OPTIONAL, as pyarrow does.
-- Columns: those of the schema given, in its order, with its types.
SELECT {columns} FROM (SELECT 1 AS one) AS r
