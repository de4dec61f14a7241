-- table_view: the view of one store table over the files a query needs (database.point).
-- Template slots (filled by Python: a view's name and its sources cannot be bound parameters):
--   {table} = a table name of rooflake.schema.TABLES; {columns} = its declared columns, each cast to its declared
--   type ("name" or CAST("name" AS TYPE) AS "name"); {sources} = zero or more `UNION ALL BY NAME <read_branch>`
--   (read_branch.sql), so an older file's missing column reads as NULL and a table without files is empty.
-- Columns: those of the table (rooflake.schema.TABLES, units in the names), `run_id` included.
CREATE OR REPLACE VIEW main.{table} AS
SELECT {columns} FROM (
    SELECT * FROM __empty_{table}
    {sources}
)
