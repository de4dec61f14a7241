-- one_row: a one-row table of a schema built from SQL literals (schema.duck.duck_row).
-- Template slot (filled by Python): {columns} = the select list of schema.duck.conform_select, each value a literal.
-- Columns: those of the schema given, in its order, with its types.
SELECT {columns}
