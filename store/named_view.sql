-- named_view: a named query as a view of the store's connection (Store.connect's extra_views).
-- Template slots (filled by Python): {name} = the query's name (an identifier); {body} = its SQL text.
-- Columns: those of the query.
CREATE VIEW {name} AS
{body}
