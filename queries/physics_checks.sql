-- physics_checks: findings that a roofline view must show, never hide or correct (docs/architecture.md section 5): points
-- above their roof, the AI order L1 <= L2 <= DRAM violated, no FLOPs on GEMM/conv-named kernels, NaN durations,
-- zero or missing peaks, durations from instrumented cycles, and NVTX attribution coverage under 90 % of GPU time.
-- One row per finding.
-- Columns:
--   run_id                 run
--   kernel_id              the kernel (NULL for run-level findings)
--   name                   kernel name (demangled) or NULL
--   check                  above_roof | ai_order_violated | gemm_without_flops | nan_duration | zero_peak |
--                          missing_roof | instrumented_duration | low_attribution_coverage
--   detail                 the numbers behind it, as text (units: FLOP/s, FLOP/byte, ns, share)
WITH dom AS (SELECT * FROM kernel_roofline WHERE is_dominant)
SELECT run_id, kernel_id, name, 'above_roof' AS "check",
       printf('%s achieved %.4g FLOP/s > attainable %.4g FLOP/s (bound %s, AI_DRAM %.4g FLOP/byte)',
              upper(precision), achieved_flops_per_s, attainable_flops_per_s, bound, ai_dram) AS detail
FROM kernel_roofline WHERE above_roof
UNION ALL
SELECT run_id, kernel_id, name, 'ai_order_violated',
       printf('AI_L1 %.4g, AI_L2 %.4g, AI_DRAM %.4g FLOP/byte (expected AI_L1 <= AI_L2 <= AI_DRAM)', ai_l1, ai_l2, ai_dram)
FROM dom WHERE ai_l1 > ai_l2 OR ai_l2 > ai_dram
UNION ALL
SELECT run_id, kernel_id, name, 'gemm_without_flops', 'FLOPs are 0 in every precision counted'
FROM kernels WHERE list_contains(flags, 'gemm_without_flops')
UNION ALL
SELECT run_id, kernel_id, name, 'nan_duration', 'duration_ns is NaN (failed replay)'
FROM kernels WHERE isnan(duration_ns)
UNION ALL
SELECT run_id, kernel_id, NULL, 'zero_peak', printf('%s peak is %.4g %s', ceiling, value, unit)
FROM ceilings WHERE value = 0 OR isnan(value)
UNION ALL
SELECT run_id, kernel_id, name, 'missing_roof',
       printf('bytes at %s but no roof for it in the report', array_to_string(levels_without_roof, ', '))
FROM dom WHERE len(levels_without_roof) > 0
UNION ALL
SELECT run_id, kernel_id, name, 'instrumented_duration',
       printf('duration %.0f ns from sm__cycles_elapsed of a pass with SASS counters', duration_ns)
FROM kernels WHERE list_contains(flags, 'duration_from_instrumented_cycles')
UNION ALL
-- (share: 0 where no GPU time is under a range; NULL where the device recorded none at all)
SELECT run_id, NULL, NULL, 'low_attribution_coverage',
       'device ' || coalesce(device_id::VARCHAR, 'unknown') || ': ' || CASE
           WHEN share IS NULL THEN 'no GPU time recorded, none of it under an NVTX range'
           ELSE printf('%.1f%% of GPU time under an NVTX range', 100 * share)
       END
FROM (
    SELECT run_id, device_id,
           coalesce(sum(gpu_time_ns) FILTER (WHERE attribution IN ('push_pop', 'start_end')), 0)
               / nullif(sum(gpu_time_ns), 0) AS share
    FROM coverage GROUP BY run_id, device_id
)
WHERE coalesce(share, 0) < 0.9
