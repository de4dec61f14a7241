-- gpu_names: the distinct machine names the runs of the store carry (GPU names as profilers wrote them, and the
-- values of the `machine` and `gpu` labels), for matching a user's --gpu to runs through the datasheet catalog.
-- Columns:
--   name                 a GPU name or label value, as stored
SELECT DISTINCT name
FROM (
    SELECT gpu_name AS name FROM runs
    UNION ALL SELECT labels['machine'] FROM runs
    UNION ALL SELECT labels['gpu'] FROM runs
)
WHERE name IS NOT NULL
ORDER BY name
