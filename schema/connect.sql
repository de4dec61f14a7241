-- connect: the settings of every DuckDB connection rooflake opens (rooflake.schema.duck.duck_connect), set on the
-- connection (DuckDB refuses them in a connection's config).
-- enable_progress_bar: DuckDB draws its bar on file descriptor 1, terminal or not, for any statement running over
-- progress_bar_time (2 s): into `rl ingest --json`'s stream of JSON objects, and into cron logs.
-- Columns: none (settings).
SET enable_progress_bar = false
