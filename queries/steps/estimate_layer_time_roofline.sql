-- estimate_layer_time_roofline: the time-based roofline (Wang, Yang, Farrell, Zhang, Kurth, Williams, arXiv
-- 2009.04598) of the layers of an nsys run with the work of an `rl estimate` run: the rows of
-- estimate_layer_roofline (`layer_points`, given by the caller: time per step measured, FLOPs and compulsory bytes
-- per step modelled) with T_min = max(F / P, Q_l / W_l over the levels with bytes, n * t_o), n = kernel launches
-- per step (a GPU run) or range calls per step (a run without kernels: at least one operator dispatch per module
-- call), the inefficiency s = T / T_min and the bound = the largest term (ties: the pipe, then DRAM, L2, L1, then
-- launch overhead). Columns as time_roofline's layer rows. t_o and its source come from the caller.
-- Given: layer_points.
-- Parameters: $launch_overhead_ns, $launch_overhead_source, $depth.
-- Columns:
--   run_id                run
--   grain                 layer
--   kernel_id             NULL (layers)
--   device_id             NULL (the run's devices together)
--   depth                 NVTX depth of the layer
--   name                  the layer: domain:phase/.../module path
--   short_name            the layer
--   nvtx_path             NULL (layers)
--   precision             the estimates' precision (layer_points.precision)
--   n_kernels             launches per step (a GPU run) or range calls per step (a run without kernels)
--   n_counted             the same: every launch or call has a T_min
--   duration_ns           ns per step, measured (layer_points.duration_ns)
--   kernel_time_ns        ns per step, = duration_ns
--   flops                 FLOP per step, modelled
--   bytes_l1              byte per step, modelled compulsory bytes at L1 when drawn there, else NULL
--   bytes_l2              byte per step at L2
--   bytes_dram            byte per step at DRAM
--   peak_flops_per_s      FLOP/s, P
--   bw_l1                 byte/s, W_L1
--   bw_l2                 byte/s, W_L2
--   bw_dram               byte/s, W_DRAM
--   compute_time_ns       ns, F / P
--   l1_time_ns            ns, Q_L1 / W_L1
--   l2_time_ns            ns, Q_L2 / W_L2
--   dram_time_ns          ns, Q_DRAM / W_DRAM
--   launch_overhead_ns    ns, t_o used
--   launch_overhead_source  where t_o came from ('option', 'derived from nsys run X', 'default')
--   overhead_floor_ns     ns, n_kernels * t_o
--   t_min_ns              ns, T_min = the largest of the terms above
--   inefficiency          s = duration_ns / t_min_ns
--   bound                 FP32 | ... | L1 | L2 | DRAM | launch_overhead: the largest term
--   bound_share           1 (one bound per layer)
--   unknown_terms         terms left out for lack of a roof (compute, L1, L2, DRAM)
--   below_bound           T < T_min by more than 0.1 % (a physics violation: flagged, never corrected)
--   flags                 layer_points.flags
WITH p AS (
    SELECT
        *,
        coalesce(launches, calls) / steps AS n,
        flops / peak_flops_per_s * 1e9 AS compute_time_ns,
        bytes_l1 / bw_l1 * 1e9 AS l1_time_ns,
        bytes_l2 / bw_l2 * 1e9 AS l2_time_ns,
        bytes_dram / bw_dram * 1e9 AS dram_time_ns
    FROM layer_points
),
t AS (
    SELECT
        *,
        n * $launch_overhead_ns AS overhead_floor_ns,
        greatest(compute_time_ns, l1_time_ns, l2_time_ns, dram_time_ns, n * $launch_overhead_ns) AS t_min_ns
    FROM p
)
SELECT
    run_id,
    'layer' AS grain,
    NULL::BIGINT AS kernel_id,
    NULL::BIGINT AS device_id,
    $depth::BIGINT AS depth,
    name,
    short_name,
    NULL::VARCHAR AS nvtx_path,
    precision,
    n AS n_kernels,
    n AS n_counted,
    duration_ns,
    duration_ns AS kernel_time_ns,
    flops,
    bytes_l1::DOUBLE AS bytes_l1,
    bytes_l2::DOUBLE AS bytes_l2,
    bytes_dram::DOUBLE AS bytes_dram,
    peak_flops_per_s,
    bw_l1,
    bw_l2,
    bw_dram,
    compute_time_ns,
    l1_time_ns,
    l2_time_ns,
    dram_time_ns,
    $launch_overhead_ns::DOUBLE AS launch_overhead_ns,
    $launch_overhead_source::VARCHAR AS launch_overhead_source,
    overhead_floor_ns,
    t_min_ns,
    duration_ns / nullif(t_min_ns, 0) AS inefficiency,
    CASE
        WHEN t_min_ns IS NULL THEN NULL
        WHEN compute_time_ns = t_min_ns THEN upper(precision)
        WHEN dram_time_ns = t_min_ns THEN 'DRAM'
        WHEN l2_time_ns = t_min_ns THEN 'L2'
        WHEN l1_time_ns = t_min_ns THEN 'L1'
        ELSE 'launch_overhead'
    END AS bound,
    1.0::DOUBLE AS bound_share,
    list_filter([
        CASE WHEN flops > 0 AND compute_time_ns IS NULL THEN 'compute' END,
        CASE WHEN bytes_l1 IS NOT NULL AND l1_time_ns IS NULL THEN 'L1' END,
        CASE WHEN bytes_l2 IS NOT NULL AND l2_time_ns IS NULL THEN 'L2' END,
        CASE WHEN bytes_dram IS NOT NULL AND dram_time_ns IS NULL THEN 'DRAM' END
    ], lambda x: x IS NOT NULL) AS unknown_terms,
    coalesce(duration_ns < t_min_ns * 0.999, false) AS below_bound,
    flags
FROM t
ORDER BY name
