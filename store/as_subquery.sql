-- as_subquery: one statement of a user's SQL as a subquery, only parsed, never run (store.user_sql: a statement
-- that parses so is a query, e.g. a PIVOT that finds its values first, which DuckDB calls a MULTI statement).
-- Template slot (filled by Python): {query} = the statement's text, without its trailing semicolon.
-- Columns: those of the statement.
FROM (
{query}
)
