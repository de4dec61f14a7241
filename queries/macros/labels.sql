-- Rules on run labels (`runs.labels`, a map of text to text set with `rl ingest --label KEY=VALUE`).

-- has_labels(labels, keys, vals): the labels hold every pair keys[i] = vals[i] (lists of text; empty: true).
CREATE MACRO has_labels(labels, keys, vals) AS
coalesce(
    list_bool_and(list_transform(
        range(1, len(keys::VARCHAR[]) + 1),
        lambda i: labels[(keys::VARCHAR[])[i]] IS NOT DISTINCT FROM (vals::VARCHAR[])[i]
    )),
    true
);

-- label_series(labels, vary): the run's labels other than `vary`, as 'k1=v1, k2=v2' (keys sorted; '' when there is
-- none): runs with equal text form one series of a sweep over `vary`. DuckDB 1.4 gives NULL for an empty list, 2.0 ''.
CREATE MACRO label_series(labels, vary) AS
coalesce(array_to_string(
    list_sort(list_transform(
        list_filter(map_entries(labels), lambda e: e.key <> vary),
        lambda e: e.key || '=' || e.value
    )),
    ', '
), '');
