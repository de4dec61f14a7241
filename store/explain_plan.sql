-- explain_plan: the physical plan of a query as JSON (database.plan_runs reads which runs each scan of a store
-- table is filtered on).
-- Template slot (filled by Python): {query} = one SELECT statement (its $parameters bound by the caller).
-- Columns: explain_key, explain_value (the plan, JSON text).
EXPLAIN (FORMAT JSON) {query}
