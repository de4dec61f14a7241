-- time_zone: the time zone this connection shows TIMESTAMPTZ values in (schema.duck.fetch_rows).
-- Columns:
--   zone  IANA name of DuckDB's TimeZone setting (Etc/UTC, Europe/Paris, ...)
SELECT current_setting('TimeZone') AS zone
