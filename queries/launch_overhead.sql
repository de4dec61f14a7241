-- launch_overhead: the kernel launch overhead t_o of each Nsight Systems run, derived from its own kernel trace, for
-- the time-based roofline's floor T >= t_o (Wang et al., arXiv 2009.04598). Pairs of consecutive kernels on one
-- device and stream (GPU start order) count when both are tiny (GPU duration < 5 us), the second was launched (its
-- runtime/driver API call began, launch_start_ns) before the first ended on the GPU, so the GPU was fed back to back
-- and any idle time between them is the cost of the launch itself, and the second is not part of a CUDA graph
-- (graph launches amortise it). t_o = the median GPU idle gap of those pairs, start_ns - the previous kernel's end_ns
-- (= the start-to-start gap minus the previous kernel's duration). One row per run whose kernels have start_ns
-- (nsys runs; ncu runs have no timeline); NULL t_o when the run has no such pair.
-- Columns:
--   run_id                run (nsys)
--   launch_overhead_ns    ns, median idle gap between back-to-back tiny kernels (NULL without such pairs)
--   gap_p25_ns            ns, first quartile of those gaps
--   gap_p75_ns            ns, third quartile (with gap_p25_ns their spread)
--   launch_period_ns      ns, median start-to-start interval of those pairs (previous duration + gap)
--   tiny_duration_ns      ns, median GPU duration of the second kernel of each pair
--   n_pairs               back-to-back pairs of tiny kernels used
--   n_kernels             kernels of the run with a GPU start time
--   method                how t_o was derived, as text
WITH k AS (
    SELECT
        run_id,
        start_ns,
        end_ns,
        launch_start_ns,
        graph_id,
        lag(start_ns) OVER w AS prev_start_ns,
        lag(end_ns) OVER w AS prev_end_ns
    FROM kernels
    WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
    WINDOW w AS (PARTITION BY run_id, device_id, stream_id ORDER BY start_ns, end_ns, kernel_id)
),
pairs AS (
    SELECT
        run_id,
        (start_ns - prev_end_ns)::DOUBLE AS gap_ns,
        (start_ns - prev_start_ns)::DOUBLE AS period_ns,
        (end_ns - start_ns)::DOUBLE AS dur_ns
    FROM k
    WHERE prev_end_ns IS NOT NULL
        AND end_ns - start_ns < 5000
        AND prev_end_ns - prev_start_ns < 5000
        AND launch_start_ns < prev_end_ns
        AND start_ns >= prev_end_ns
        AND graph_id IS NULL
),
agg AS (
    SELECT
        run_id,
        median(gap_ns) AS launch_overhead_ns,
        quantile_cont(gap_ns, 0.25) AS gap_p25_ns,
        quantile_cont(gap_ns, 0.75) AS gap_p75_ns,
        median(period_ns) AS launch_period_ns,
        median(dur_ns) AS tiny_duration_ns,
        count(*) AS n_pairs
    FROM pairs
    GROUP BY run_id
),
runs_with_timeline AS (
    SELECT run_id, count(*) AS n_kernels FROM kernels WHERE start_ns IS NOT NULL GROUP BY run_id
)
SELECT
    r.run_id,
    a.launch_overhead_ns::DOUBLE AS launch_overhead_ns,
    a.gap_p25_ns::DOUBLE AS gap_p25_ns,
    a.gap_p75_ns::DOUBLE AS gap_p75_ns,
    a.launch_period_ns::DOUBLE AS launch_period_ns,
    a.tiny_duration_ns::DOUBLE AS tiny_duration_ns,
    coalesce(a.n_pairs, 0) AS n_pairs,
    r.n_kernels,
    CASE
        WHEN a.n_pairs IS NULL THEN
            'no back-to-back pair of tiny kernels (< 5 us, the next launched before the previous ended, '
            || 'same device and stream, no CUDA graph) in the trace'
        ELSE printf(
            'median GPU idle gap (start - previous end) over %d back-to-back pairs of kernels < 5 us on one '
            || 'device and stream, the next launched before the previous ended (no CUDA graph launches)',
            a.n_pairs
        )
    END AS method
FROM runs_with_timeline AS r
LEFT JOIN agg AS a USING (run_id)
ORDER BY r.run_id
