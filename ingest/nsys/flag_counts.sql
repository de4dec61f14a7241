-- flag_counts: how many rows of each output table carry each flag of a suspicious source row (rooflake.ingest.
-- nsys_sqlite: the ingest summary's counts and warnings; op_flags from launches.sql, range_flags from ranges.sql).
-- Columns:
--   table_name   kernels | memops | ranges
--   flag         null_start | null_end (GPU operations) | reversed_time | negative_time |
--                  duplicate_correlation_id | duplicate_launch_call
--   n            rows with that flag
SELECT table_name, flag, count(*) AS n
FROM (
    SELECT CASE WHEN op_kind = 'kernel' THEN 'kernels' ELSE 'memops' END AS table_name, unnest(flags) AS flag
    FROM op_flags
    UNION ALL
    SELECT 'ranges', unnest(flags) FROM range_flags
)
GROUP BY ALL
ORDER BY ALL;
