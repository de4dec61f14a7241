-- regex_check: whether DuckDB accepts $pattern as a regular expression (RE2 syntax, as regexp_matches reads the
-- --match / --layer options of run_layers, run_range_layers and trajectory_points); a pattern it refuses makes the
-- statement fail with RE2's reason, which the views turn into a usage error naming the option.
-- Parameters: $pattern.
-- Columns:
--   matches_empty        whether the pattern matches the empty string (unused: the statement is run for its error)
SELECT regexp_matches('', $pattern::VARCHAR) AS matches_empty
