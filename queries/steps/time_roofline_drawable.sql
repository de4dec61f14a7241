-- time_roofline_drawable: per run of $run_ids, its kernels and whether any of them could be drawn on a time-based
-- roofline against any roofs: a duration > 0, bytes > 0 at some level and a FLOP count >= 0 of some precision
-- (kernel_roofline; NaN is none of them). The points of time_roofline need all three and a T_min, so a run without
-- such a kernel has no time-based roofline whatever its ceilings (views.time_roofline.time_rooflines skips its roofs).
-- Parameters: $run_ids.
-- Columns:
--   run_id               run (runs without kernels have no row)
--   n_kernels            kernel launches of the run (rows of `kernels`)
--   drawable             some kernel has a duration, bytes and FLOPs (see above)
WITH counted AS (
    SELECT DISTINCT run_id, kernel_id
    FROM kernel_roofline
    WHERE list_contains($run_ids::VARCHAR[], run_id) AND flops >= 0 AND NOT isnan(flops)
)
SELECT
    k.run_id,
    count(*) AS n_kernels,
    coalesce(bool_or(
        c.kernel_id IS NOT NULL
        AND k.duration_ns > 0 AND NOT isnan(k.duration_ns)
        AND (
            (k.bytes_l1 > 0 AND NOT isnan(k.bytes_l1))
            OR (k.bytes_l2 > 0 AND NOT isnan(k.bytes_l2))
            OR (k.bytes_dram > 0 AND NOT isnan(k.bytes_dram))
        )
    ), false) AS drawable
FROM kernels AS k
LEFT JOIN counted AS c ON c.run_id = k.run_id AND c.kernel_id = k.kernel_id
WHERE list_contains($run_ids::VARCHAR[], k.run_id)
GROUP BY k.run_id
ORDER BY k.run_id
