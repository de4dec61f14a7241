-- time_roofline: the time-based roofline of one run (Wang, Yang, Farrell, Zhang, Kurth, Williams, "Time-Based Roofline
-- for Deep Learning Performance Analysis", arXiv 2009.04598), per kernel and per NVTX layer at every depth. A kernel
-- with F FLOPs on pipe p (peak P_p) and Q_l bytes at level l (bandwidth W_l) takes at least T_min = max(F_p / P_p over
-- its pipes, Q_l / W_l over the levels, t_o); the inefficiency is s = T / T_min (>= 1) and the bound is the largest
-- term. Every pipe must execute its own FLOPs, so the compute term is the largest F_p / P_p over the precisions counted
-- (pipes run concurrently: a max, not a sum). Ceilings are the kernel's own, as in kernel_roofline (the kernel's tensor
-- roof, kernel_roofs.tensor_roof, for tensor FLOPs). A term is known when its counter and its roof are (a NaN or zero
-- roof is unknown); the compute term, when every pipe with FLOPs has its roof (one without: the max is unknown, never
-- taken from another pipe) and, if every counted pipe did 0 FLOPs, no pipe's counter is missing (a GEMM on the Tensor
-- Cores without their counts is not a zero-FLOP kernel); a kernel whose compute and memory terms are all unknown (no
-- counters, e.g. an nsys kernel) gets NULL T_min, s and bound. A layer of n kernels takes at least sum T_min,k >= n
-- t_o: layer rows sum the kernels whose stack lies under the layer (the grouping of layer_summary, per device), over
-- the launches with a known T_min and a duration. t_o is given by the caller with its provenance (in SQL: `SELECT *
-- FROM time_roofline('RUN_ID', 1000)`; rl roofline --time derives t_o from an nsys trace).
-- Parameters: $run_id, $launch_overhead_ns, $launch_overhead_source = 'parameter'.
-- Columns:
--   run_id                run
--   grain                 kernel | layer: what one row is
--   kernel_id             kernel (NULL for layers)
--   device_id             CUDA device
--   depth                 layers: NVTX depth (1 = outermost); kernels: NULL
--   name                  kernels: demangled name; layers: domain:outer/.../name or '(no NVTX range)'
--   short_name            kernels: short name; layers: the layer
--   nvtx_path             kernels: NVTX path; layers: NULL
--   precision             fp64 | fp32 | fp16 | tensor: the pipe of the compute term (its F / P is the largest; without
--                         peaks the dominant precision); layers: the kernels' pipe, or 'mixed'
--   n_kernels             launches (1 for a kernel row)
--   n_counted             launches with a known T_min and a duration (the sums below are over them)
--   duration_ns           ns, T: the kernel's duration; layers: sum over the counted launches (NaN for a failed replay)
--   kernel_time_ns        ns, layers: sum of every launch's duration (NaN left out); kernels: = duration_ns
--   flops                 FLOP on that pipe (layers: sum)
--   bytes_l1              byte at L1 (layers: sum)
--   bytes_l2              byte at L2 (layers: sum)
--   bytes_dram            byte at DRAM (layers: sum)
--   peak_flops_per_s      FLOP/s, P of that pipe (kernels only)
--   bw_l1                 byte/s, W_L1 (kernels only)
--   bw_l2                 byte/s, W_L2 (kernels only)
--   bw_dram               byte/s, W_DRAM (kernels only)
--   compute_time_ns       ns, F / P (layers: sum)
--   l1_time_ns            ns, Q_L1 / W_L1 (layers: sum)
--   l2_time_ns            ns, Q_L2 / W_L2 (layers: sum)
--   dram_time_ns          ns, Q_DRAM / W_DRAM (layers: sum)
--   launch_overhead_ns    ns, t_o used (the parameter)
--   launch_overhead_source  where t_o came from: 'option', 'derived from nsys run X', 'default' (the parameter;
--                         'parameter' when not given)
--   overhead_floor_ns     ns, t_o for a kernel; n_kernels * t_o for a layer (the n t_o floor)
--   t_min_ns              ns, T_min (layers: sum over the counted launches)
--   inefficiency          s = duration_ns / t_min_ns (NULL for a NaN or missing duration)
--   bound                 FP64 | FP32 | FP16 | TENSOR | L1 | L2 | DRAM | launch_overhead: the largest term (ties: the
--                         pipe, then DRAM, L2, L1); layers: the bound of the kernels that hold the most of sum T_min
--   bound_share           layers: share of t_min_ns held by the kernels of that bound; kernels: 1
--   unknown_terms         terms left out for lack of a counter or a roof (compute, L1, L2, DRAM); layers: union
--   below_bound           T < T_min by more than 0.1 % (a physics violation: flag it, never correct it)
--   flags                 kernel flags from ingest (layers: union)
WITH c AS (SELECT kernel_id, bw_l1, bw_l2, bw_dram FROM kernel_roofs WHERE run_id = $run_id),
f0 AS (
    SELECT
        kernel_id,
        precision,
        is_dominant,
        flops,
        peak_flops_per_s,
        CASE WHEN flops >= 0 AND NOT isnan(flops) AND peak_flops_per_s > 0 AND NOT isnan(peak_flops_per_s)
            THEN flops / peak_flops_per_s * 1e9 END AS compute_time_ns
    FROM kernel_roofline
    WHERE run_id = $run_id
),
f AS (
    SELECT * EXCLUDE (rk) FROM (
        SELECT
            *,
            row_number() OVER (
                PARTITION BY kernel_id ORDER BY compute_time_ns DESC NULLS LAST, is_dominant DESC
            ) AS rk,
            -- a pipe with FLOPs but no usable roof: the max over the pipes is unknown
            bool_or(flops > 0 AND compute_time_ns IS NULL) OVER (PARTITION BY kernel_id) AS roofless,
            max(flops) OVER (PARTITION BY kernel_id) AS max_flops
        FROM f0
    )
    WHERE rk = 1
),
k AS (
    SELECT
        k.run_id,
        k.kernel_id,
        k.device_id,
        k.name,
        k.short_name,
        k.nvtx_path,
        k.nvtx_domain,
        k.nvtx_stack,
        k.duration_ns,
        CASE WHEN k.duration_ns > 0 AND NOT isnan(k.duration_ns) THEN k.duration_ns END AS valid_duration_ns,
        f.precision,
        f.flops,
        f.peak_flops_per_s,
        k.bytes_l1,
        k.bytes_l2,
        k.bytes_dram,
        c.bw_l1,
        c.bw_l2,
        c.bw_dram,
        -- unknown as well when every counted pipe did 0 FLOPs while a pipe's counter is missing (a GEMM on the
        -- Tensor Cores without their counts: not a zero-FLOP kernel)
        CASE WHEN NOT f.roofless AND NOT (f.max_flops = 0 AND (k.flops_fp64 IS NULL OR k.flops_fp32 IS NULL
                OR k.flops_fp16 IS NULL OR k.flops_tensor IS NULL))
            THEN f.compute_time_ns END AS compute_time_ns,
        CASE WHEN k.bytes_l1 >= 0 AND NOT isnan(k.bytes_l1) AND c.bw_l1 > 0 AND NOT isnan(c.bw_l1)
            THEN k.bytes_l1 / c.bw_l1 * 1e9 END AS l1_time_ns,
        CASE WHEN k.bytes_l2 >= 0 AND NOT isnan(k.bytes_l2) AND c.bw_l2 > 0 AND NOT isnan(c.bw_l2)
            THEN k.bytes_l2 / c.bw_l2 * 1e9 END AS l2_time_ns,
        CASE WHEN k.bytes_dram >= 0 AND NOT isnan(k.bytes_dram) AND c.bw_dram > 0 AND NOT isnan(c.bw_dram)
            THEN k.bytes_dram / c.bw_dram * 1e9 END AS dram_time_ns,
        $launch_overhead_ns::DOUBLE AS t_o,
        k.flags
    FROM kernels AS k
    LEFT JOIN f USING (kernel_id)
    LEFT JOIN c USING (kernel_id)
    WHERE k.run_id = $run_id
),
m AS (
    SELECT
        *,
        CASE WHEN coalesce(compute_time_ns, l1_time_ns, l2_time_ns, dram_time_ns) IS NOT NULL
            THEN greatest(compute_time_ns, l1_time_ns, l2_time_ns, dram_time_ns, t_o) END AS t_min_ns,
        list_filter(
            [CASE WHEN compute_time_ns IS NULL THEN 'compute' END,
             CASE WHEN l1_time_ns IS NULL THEN 'L1' END,
             CASE WHEN l2_time_ns IS NULL THEN 'L2' END,
             CASE WHEN dram_time_ns IS NULL THEN 'DRAM' END],
            lambda x: x IS NOT NULL
        ) AS unknown_terms
    FROM k
),
kb AS (
    SELECT
        *,
        CASE
            WHEN t_min_ns IS NULL THEN NULL
            WHEN compute_time_ns = t_min_ns THEN upper(precision)
            WHEN dram_time_ns = t_min_ns THEN 'DRAM'
            WHEN l2_time_ns = t_min_ns THEN 'L2'
            WHEN l1_time_ns = t_min_ns THEN 'L1'
            ELSE 'launch_overhead'
        END AS bound,
        t_min_ns IS NOT NULL AND valid_duration_ns IS NOT NULL AS counted
    FROM m
),
-- layers: every kernel under the first d names of its NVTX stack (layer_summary's grouping)
depths AS (
    SELECT greatest(max(coalesce(len(nvtx_stack), 0)), 1) AS max_depth FROM kb
),
exploded AS (
    SELECT kb.*, unnest(range(1, d.max_depth + 1)) AS depth FROM kb, depths AS d
),
labelled AS (
    SELECT
        *,
        nvtx_layer(nvtx_domain, nvtx_stack, depth) AS layer
    FROM exploded
),
per_bound AS (
    SELECT device_id, depth, layer, bound, sum(t_min_ns) AS t
    FROM labelled
    WHERE counted
    GROUP BY device_id, depth, layer, bound
),
top_bound AS (
    SELECT device_id, depth, layer, arg_max(bound, t) AS bound, max(t) AS t FROM per_bound
    GROUP BY device_id, depth, layer
),
layers AS (
    SELECT
        device_id,
        depth,
        layer,
        count(*) AS n_kernels,
        count(*) FILTER (WHERE counted) AS n_counted,
        sum(valid_duration_ns) FILTER (WHERE counted) AS duration_ns,
        coalesce(sum(valid_duration_ns), 0) AS kernel_time_ns,
        CASE WHEN count(DISTINCT precision) FILTER (WHERE counted) > 1 THEN 'mixed'
            ELSE min(precision) FILTER (WHERE counted) END AS precision,
        sum(flops) FILTER (WHERE counted) AS flops,
        sum(bytes_l1) FILTER (WHERE counted) AS bytes_l1,
        sum(bytes_l2) FILTER (WHERE counted) AS bytes_l2,
        sum(bytes_dram) FILTER (WHERE counted) AS bytes_dram,
        sum(compute_time_ns) FILTER (WHERE counted) AS compute_time_ns,
        sum(l1_time_ns) FILTER (WHERE counted) AS l1_time_ns,
        sum(l2_time_ns) FILTER (WHERE counted) AS l2_time_ns,
        sum(dram_time_ns) FILTER (WHERE counted) AS dram_time_ns,
        count(*) * any_value(t_o) AS overhead_floor_ns,  -- t_o: $launch_overhead_ns (a macro parameter cannot
        -- stand in an aggregate query's select list)
        sum(t_min_ns) FILTER (WHERE counted) AS t_min_ns,
        coalesce(list_sort(list_distinct(flatten(list(unknown_terms) FILTER (WHERE counted)))), []) AS unknown_terms,
        coalesce(list_sort(list_distinct(flatten(list(flags)))), []) AS flags
    FROM labelled
    GROUP BY device_id, depth, layer
)
SELECT
    run_id,
    'kernel' AS grain,
    kernel_id,
    device_id,
    NULL::BIGINT AS depth,
    name,
    short_name,
    nvtx_path,
    precision,
    1::BIGINT AS n_kernels,
    counted::BIGINT AS n_counted,
    duration_ns,
    duration_ns AS kernel_time_ns,
    flops,
    bytes_l1,
    bytes_l2,
    bytes_dram,
    peak_flops_per_s,
    bw_l1,
    bw_l2,
    bw_dram,
    compute_time_ns,
    l1_time_ns,
    l2_time_ns,
    dram_time_ns,
    t_o AS launch_overhead_ns,
    $launch_overhead_source::VARCHAR AS launch_overhead_source,
    t_o AS overhead_floor_ns,
    t_min_ns,
    valid_duration_ns / t_min_ns AS inefficiency,
    bound,
    CASE WHEN bound IS NOT NULL THEN 1.0 END AS bound_share,
    unknown_terms,
    coalesce(valid_duration_ns < t_min_ns * 0.999, false) AS below_bound,
    flags
FROM kb
UNION ALL
SELECT
    $run_id::VARCHAR,
    'layer',
    NULL,
    l.device_id,
    l.depth,
    l.layer,
    l.layer,
    NULL,
    l.precision,
    l.n_kernels,
    l.n_counted,
    l.duration_ns,
    l.kernel_time_ns,
    l.flops,
    l.bytes_l1,
    l.bytes_l2,
    l.bytes_dram,
    NULL,
    NULL,
    NULL,
    NULL,
    l.compute_time_ns,
    l.l1_time_ns,
    l.l2_time_ns,
    l.dram_time_ns,
    $launch_overhead_ns::DOUBLE,
    $launch_overhead_source::VARCHAR,
    l.overhead_floor_ns,
    l.t_min_ns,
    l.duration_ns / l.t_min_ns,
    b.bound,
    b.t / l.t_min_ns,
    l.unknown_terms,
    coalesce(l.duration_ns < l.t_min_ns * 0.999, false),
    l.flags
FROM layers AS l
LEFT JOIN top_bound AS b USING (device_id, depth, layer)
ORDER BY grain, kernel_id, depth, device_id, kernel_time_ns DESC, name
