-- op_summary: the recorded ops of a trace grouped by (op_name, input_dims, input_types), as TraceLens'
-- ops_unique_args groups them: calls, modelled work per call (FLOPs, bytes; from op_roofline) and the measured time
-- statistics over the calls. Ops whose FLOPs another op of their chain carries are left out (they would count the
-- chain's time twice): each row's work and time are its own chain's.
-- Parameters: $run_id, $launch_overhead_ns = 1000.
-- Columns:
--   run_id              run
--   op_name             operator as recorded
--   input_dims          the input dims as the trace writes them
--   input_types         the input types as the trace writes them
--   calls               occurrences of the op with these inputs
--   flops               FLOP per call, modelled (NULL: no rule; see flops_source)
--   bytes               byte per call, modelled compulsory bytes
--   ai                  FLOP/byte = flops / bytes
--   flops_source        whose rule gave the FLOPs, or why they are NULL
--   time_ns_total       ns, sum of the calls' times (op_roofline.time_ns)
--   time_ns_mean        ns, mean per call
--   time_ns_median      ns, median per call
--   time_ns_min         ns, lowest call
--   time_ns_max         ns, highest call
--   time_share          the group's share of the run's op time (0..1)
--   flops_per_s         FLOP/s = calls x flops / time_ns_total, achieved
--   attainable_flops_per_s  FLOP/s, the roof at the group's AI (op_roofline)
--   fraction_of_roof    achieved / attainable
--   bound               DRAM | the pipe | NULL (op_roofline.bound)
--   peak_ceiling        the compute roof used
--   kernels_per_call    GPU kernels launched per call (mean)
WITH r AS (
    SELECT * FROM op_roofline($run_id, $launch_overhead_ns)
    WHERE NOT starts_with(flops_source, 'counted in')
),
g AS (
    SELECT
        run_id, op_name, input_dims, input_types,
        count(*) AS calls,
        any_value(flops) AS flops,
        any_value(bytes) AS bytes,
        any_value(ai) AS ai,
        any_value(flops_source) AS flops_source,
        sum(time_ns)::BIGINT AS time_ns_total,
        avg(time_ns) AS time_ns_mean,
        median(time_ns) AS time_ns_median,
        min(time_ns) AS time_ns_min,
        max(time_ns) AS time_ns_max,
        any_value(attainable_flops_per_s) AS attainable_flops_per_s,
        any_value(bound) AS bound,
        any_value(peak_ceiling) AS peak_ceiling,
        avg(kernels) AS kernels_per_call
    FROM r
    GROUP BY run_id, op_name, input_dims, input_types
)
SELECT
    run_id, op_name, input_dims, input_types, calls, flops, bytes, ai, flops_source, time_ns_total, time_ns_mean,
    time_ns_median, time_ns_min, time_ns_max,
    time_ns_total / nullif(sum(time_ns_total) OVER (), 0) AS time_share,
    calls * flops * 1e9 / nullif(time_ns_total, 0) AS flops_per_s,
    attainable_flops_per_s,
    calls * flops * 1e9 / nullif(time_ns_total, 0) / nullif(attainable_flops_per_s, 0) AS fraction_of_roof,
    bound, peak_ceiling, kernels_per_call
FROM g
ORDER BY time_ns_total DESC NULLS LAST, op_name, input_dims
