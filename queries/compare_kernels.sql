-- compare_kernels: two runs side by side per kernel (name under its NVTX path): launches, GPU time, FLOP/s, AI per
-- level and bound of the dominant precision; kernels present in one run only are 'new'/'removed', except that when
-- each run has exactly one such kernel under an NVTX path and both count the same FLOPs of the same dominant
-- precision (the same work), they are paired as 'renamed' (an optimised kernel often gets a new name:
-- fa3_fwd_kernel -> fa3db_full_fwd_kernel, 34,359,738,368 tensor ops each).
-- Parameters: $base_run, $new_run.
-- Columns:
--   nvtx_path               the kernel's NVTX path (NULL: outside every range); with name its identity across runs
--   name                    demangled kernel name
--   status                  both | renamed | new | removed
--   base_launches           launches in the base run
--   new_launches            launches in the new run
--   base_time_ns            ns, kernel time summed over launches (NaN durations left out)
--   new_time_ns             ns
--   time_change             new / base - 1; NULL unless in both
--   base_flops_per_s        FLOP/s of the dominant precision, over the launches with counters (compare_layers
--                           counts every precision: one kernel's layer shows more where it has two pipes)
--   new_flops_per_s         FLOP/s
--   base_ai_l1              FLOP/byte of the dominant precision (NULL for a kernel without FLOPs: base_flops_note)
--   new_ai_l1               FLOP/byte
--   base_ai_l2              FLOP/byte
--   new_ai_l2               FLOP/byte
--   base_ai_dram            FLOP/byte
--   new_ai_dram             FLOP/byte
--   base_bound              bound of the dominant precision (most frequent over launches)
--   new_bound               the same in the new run
--   new_name                the kernel's name in the new run (differs from name when status is renamed)
--   base_precision          dominant precision (fp64 | fp32 | fp16 | tensor; most frequent over launches); NULL for
--                           a kernel without FLOPs at any precision (base_flops_note says why)
--   new_precision           the same in the new run
--   base_flops              FLOP of the dominant precision, summed over launches with counters
--   new_flops               FLOP
--   base_fraction_of_roof   achieved / attainable FLOP/s of the dominant precision, time-weighted over launches with
--                           a roof (kernel_roofline.fraction_of_roof; 0..1)
--   new_fraction_of_roof    the same in the new run
--   short_name              the kernel's base name (kernels.short_name) in the base run, else in the new run
--   new_short_name          its base name in the new run
--   base_flops_note         why the kernel has no precision or AI in the base run: 'no FLOPs at any precision'
--                           (every counter 0: a copy), '0 FLOPs where counted, no counter for fp16, tensor' (an int8
--                           GEMM whose Tensor-Core counts the report lacks), 'no FLOP counters', 'failed replay
--                           (NaN values)'; NULL where it has FLOPs (or is not in the run)
--   new_flops_note          the same in the new run
WITH k AS (
    SELECT
        k.run_id, k.nvtx_path, k.name, count(*) AS n,
        sum(CASE WHEN isnan(k.duration_ns) THEN NULL ELSE k.duration_ns END) AS t,
        sum(r.flops) AS f, sum(r.duration_ns) FILTER (WHERE r.flops IS NOT NULL AND NOT isnan(r.duration_ns)) AS ct,
        sum(r.bytes_dram) AS q, sum(r.bytes_l1) AS q1, sum(r.bytes_l2) AS q2, mode(r.bound) AS bound,
        mode(r.precision) AS prec, any_value(k.short_name) AS short_name,
        any_value(r.flops_uncounted) AS uncounted, bool_or(r.run_id IS NOT NULL) AS counted,
        sum(r.fraction_of_roof * r.duration_ns) FILTER (WHERE NOT isnan(r.fraction_of_roof) AND NOT isnan(r.duration_ns))
            / nullif(sum(r.duration_ns) FILTER (WHERE NOT isnan(r.fraction_of_roof) AND NOT isnan(r.duration_ns)), 0)
            AS frac
    FROM kernels AS k
    LEFT JOIN (  -- each run by its own `run_id =` filter: DuckDB pushes it into every scan (an IN list: not all)
        SELECT * FROM kernel_roofline WHERE run_id = $base_run
        UNION ALL
        SELECT * FROM kernel_roofline WHERE run_id = $new_run AND $new_run <> $base_run
    ) AS r ON r.run_id = k.run_id AND r.kernel_id = k.kernel_id AND r.is_dominant
    WHERE k.run_id IN ($base_run, $new_run)
    GROUP BY k.run_id, k.nvtx_path, k.name
),
b AS (SELECT * FROM k WHERE run_id = $base_run),
n0 AS (SELECT * FROM k WHERE run_id = $new_run),
-- kernels of one run only, when they are the only one of their NVTX path in that run: paired across runs when
-- they do the same work
gone AS (
    SELECT nvtx_path, name, f, prec FROM b
    WHERE NOT EXISTS (SELECT 1 FROM n0 WHERE n0.name = b.name AND n0.nvtx_path IS NOT DISTINCT FROM b.nvtx_path)
    QUALIFY count(*) OVER (PARTITION BY nvtx_path) = 1
),
came AS (
    SELECT nvtx_path, name, f, prec FROM n0
    WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.name = n0.name AND b.nvtx_path IS NOT DISTINCT FROM n0.nvtx_path)
    QUALIFY count(*) OVER (PARTITION BY nvtx_path) = 1
),
n AS (
    SELECT n0.*, coalesce(gone.name, n0.name) AS match_name
    FROM n0
    LEFT JOIN came ON came.name = n0.name AND came.nvtx_path IS NOT DISTINCT FROM n0.nvtx_path
    LEFT JOIN gone ON came.name IS NOT NULL AND gone.nvtx_path IS NOT DISTINCT FROM n0.nvtx_path
        AND gone.f = came.f AND gone.f > 0 AND gone.prec = came.prec
)
SELECT
    coalesce(b.nvtx_path, n.nvtx_path) AS nvtx_path,
    coalesce(b.name, n.name) AS name,
    CASE WHEN b.name IS NULL THEN 'new' WHEN n.name IS NULL THEN 'removed' WHEN b.name <> n.name THEN 'renamed'
        ELSE 'both' END AS status,
    b.n AS base_launches, n.n AS new_launches,
    b.t AS base_time_ns, n.t AS new_time_ns,
    n.t / nullif(b.t, 0) - 1 AS time_change,
    b.f * 1e9 / nullif(b.ct, 0) AS base_flops_per_s, n.f * 1e9 / nullif(n.ct, 0) AS new_flops_per_s,
    CASE WHEN b.f > 0 THEN b.f / nullif(b.q1, 0) END AS base_ai_l1,
    CASE WHEN n.f > 0 THEN n.f / nullif(n.q1, 0) END AS new_ai_l1,
    CASE WHEN b.f > 0 THEN b.f / nullif(b.q2, 0) END AS base_ai_l2,
    CASE WHEN n.f > 0 THEN n.f / nullif(n.q2, 0) END AS new_ai_l2,
    CASE WHEN b.f > 0 THEN b.f / nullif(b.q, 0) END AS base_ai_dram,
    CASE WHEN n.f > 0 THEN n.f / nullif(n.q, 0) END AS new_ai_dram,
    b.bound AS base_bound, n.bound AS new_bound,
    n.name AS new_name,
    CASE WHEN b.f > 0 THEN b.prec END AS base_precision, CASE WHEN n.f > 0 THEN n.prec END AS new_precision,
    b.f AS base_flops, n.f AS new_flops,
    b.frac AS base_fraction_of_roof, n.frac AS new_fraction_of_roof,
    coalesce(b.short_name, n.short_name) AS short_name, n.short_name AS new_short_name,
    no_flops_reason(b.f, b.counted, b.uncounted) AS base_flops_note,
    no_flops_reason(n.f, n.counted, n.uncounted) AS new_flops_note
FROM b FULL OUTER JOIN n ON b.name = n.match_name AND b.nvtx_path IS NOT DISTINCT FROM n.nvtx_path
ORDER BY greatest(coalesce(b.t, 0), coalesce(n.t, 0)) DESC, name
