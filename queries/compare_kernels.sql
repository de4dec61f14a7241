-- compare_kernels: two runs side by side per kernel (name under its NVTX path): launches, GPU time, FLOP/s, AI per
-- level and bound of the dominant precision; kernels present in one run only are 'new'/'removed'.
-- Parameters: $base_run, $new_run.
-- Columns:
--   nvtx_path, name         the kernel's identity across runs (NULL path: outside every range)
--   status                  both | new | removed
--   base_launches, new_launches
--   base_time_ns, new_time_ns        ns, summed over launches
--   time_change             new / base - 1; NULL unless in both
--   base_flops_per_s, new_flops_per_s          FLOP/s over the launches with counters
--   base_ai_l1, new_ai_l1, base_ai_l2, new_ai_l2, base_ai_dram, new_ai_dram     FLOP/byte
--   base_bound, new_bound            bound of the dominant precision (most frequent over launches)
WITH k AS (
    SELECT
        k.run_id, k.nvtx_path, k.name, count(*) AS n,
        sum(CASE WHEN isnan(k.duration_ns) THEN NULL ELSE k.duration_ns END) AS t,
        sum(r.flops) AS f, sum(r.duration_ns) FILTER (WHERE r.flops IS NOT NULL AND NOT isnan(r.duration_ns)) AS ct,
        sum(r.bytes_dram) AS q, sum(r.bytes_l1) AS q1, sum(r.bytes_l2) AS q2, mode(r.bound) AS bound
    FROM kernels AS k
    LEFT JOIN kernel_roofline AS r ON r.run_id = k.run_id AND r.kernel_id = k.kernel_id AND r.is_dominant
    WHERE k.run_id IN ($base_run, $new_run)
    GROUP BY k.run_id, k.nvtx_path, k.name
),
b AS (SELECT * FROM k WHERE run_id = $base_run),
n AS (SELECT * FROM k WHERE run_id = $new_run)
SELECT
    coalesce(b.nvtx_path, n.nvtx_path) AS nvtx_path,
    coalesce(b.name, n.name) AS name,
    CASE WHEN b.name IS NULL THEN 'new' WHEN n.name IS NULL THEN 'removed' ELSE 'both' END AS status,
    b.n AS base_launches, n.n AS new_launches,
    b.t AS base_time_ns, n.t AS new_time_ns,
    n.t / nullif(b.t, 0) - 1 AS time_change,
    b.f * 1e9 / nullif(b.ct, 0) AS base_flops_per_s, n.f * 1e9 / nullif(n.ct, 0) AS new_flops_per_s,
    b.f / nullif(b.q1, 0) AS base_ai_l1, n.f / nullif(n.q1, 0) AS new_ai_l1,
    b.f / nullif(b.q2, 0) AS base_ai_l2, n.f / nullif(n.q2, 0) AS new_ai_l2,
    b.f / nullif(b.q, 0) AS base_ai_dram, n.f / nullif(n.q, 0) AS new_ai_dram,
    b.bound AS base_bound, n.bound AS new_bound
FROM b FULL OUTER JOIN n ON b.name = n.name AND b.nvtx_path IS NOT DISTINCT FROM n.nvtx_path
ORDER BY greatest(coalesce(b.t, 0), coalesce(n.t, 0)) DESC, name
