-- compare_layers: two runs side by side per NVTX layer at one depth (all devices summed): GPU time, launches,
-- FLOP/s, AI per level, bound, share of GPU time, and the time change. Layers present in one run only are 'new'/'removed'.
-- Parameters: $base_run, $new_run, $depth.
-- Columns:
--   layer                  domain:outer/.../name, or '(no NVTX range)'
--   status                 both | new | removed
--   base_time_ns           ns, GPU time (kernels + memops, layer_summary.gpu_time_ns) in the base run
--   new_time_ns            ns, the same in the new run
--   time_change            new / base - 1 (0.1 = 10 % slower); NULL unless in both
--   base_launches          kernel launches in the base run
--   new_launches           kernel launches in the new run
--   base_flops_per_s       FLOP/s of every precision counted (NULL without counters; compare_kernels takes each
--                          kernel's dominant precision, as its bound and fraction of roof do)
--   new_flops_per_s        FLOP/s
--   base_ai_l1             FLOP/byte
--   new_ai_l1              FLOP/byte
--   base_ai_l2             FLOP/byte
--   new_ai_l2              FLOP/byte
--   base_ai_dram           FLOP/byte
--   new_ai_dram            FLOP/byte
--   base_bound             the bound holding most of the layer's kernel time (kernel_roofline)
--   new_bound              the same in the new run
--   base_share             share of the base run's GPU time
--   new_share              share of the new run's GPU time
WITH l AS (
    SELECT run_id, layer, sum(gpu_time_ns) AS t, sum(launches)::BIGINT AS n, sum(flops) AS f,
           sum(counted_time_ns) AS ct, sum(bytes_dram) AS q, sum(bytes_l1) AS q1, sum(bytes_l2) AS q2
    FROM (
        SELECT * FROM layer_summary WHERE run_id = $base_run
        UNION ALL
        SELECT * FROM layer_summary WHERE run_id = $new_run AND $new_run <> $base_run
    ) WHERE depth = $depth
    GROUP BY run_id, layer
),
s AS (
    SELECT *, t / sum(t) OVER (PARTITION BY run_id) AS share FROM l
),
-- a layer's bound: the bound (kernel_roofline, dominant precision) holding most of its kernels' time
kb AS (
    SELECT
        k.run_id,
        nvtx_layer(k.nvtx_domain, k.nvtx_stack, $depth) AS layer,
        r.bound,
        sum(k.duration_ns) FILTER (WHERE NOT isnan(k.duration_ns)) AS t
    FROM kernels AS k
    JOIN (  -- each run by its own `run_id =` filter: DuckDB pushes it into every scan (an IN list: not all)
        SELECT * FROM kernel_roofline WHERE run_id = $base_run
        UNION ALL
        SELECT * FROM kernel_roofline WHERE run_id = $new_run AND $new_run <> $base_run
    ) AS r ON r.run_id = k.run_id AND r.kernel_id = k.kernel_id AND r.is_dominant
    WHERE k.run_id IN ($base_run, $new_run) AND r.bound IS NOT NULL
    GROUP BY ALL
),
lb AS (SELECT run_id, layer, arg_max(bound, t) AS bound FROM kb GROUP BY run_id, layer),
b AS (SELECT s.*, lb.bound FROM s LEFT JOIN lb USING (run_id, layer) WHERE s.run_id = $base_run),
n AS (SELECT s.*, lb.bound FROM s LEFT JOIN lb USING (run_id, layer) WHERE s.run_id = $new_run)
SELECT
    coalesce(b.layer, n.layer) AS layer,
    CASE WHEN b.layer IS NULL THEN 'new' WHEN n.layer IS NULL THEN 'removed' ELSE 'both' END AS status,
    b.t AS base_time_ns, n.t AS new_time_ns,
    n.t / nullif(b.t, 0) - 1 AS time_change,
    b.n AS base_launches, n.n AS new_launches,
    b.f * 1e9 / nullif(b.ct, 0) AS base_flops_per_s, n.f * 1e9 / nullif(n.ct, 0) AS new_flops_per_s,
    b.f / nullif(b.q1, 0) AS base_ai_l1, n.f / nullif(n.q1, 0) AS new_ai_l1,
    b.f / nullif(b.q2, 0) AS base_ai_l2, n.f / nullif(n.q2, 0) AS new_ai_l2,
    b.f / nullif(b.q, 0) AS base_ai_dram, n.f / nullif(n.q, 0) AS new_ai_dram,
    b.bound AS base_bound, n.bound AS new_bound,
    b.share AS base_share, n.share AS new_share
FROM b FULL OUTER JOIN n ON b.layer = n.layer
ORDER BY greatest(coalesce(b.t, 0), coalesce(n.t, 0)) DESC, layer
