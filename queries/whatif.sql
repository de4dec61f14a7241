-- whatif: what scaling the machine's ceilings would buy one run (DeLTA's use of a traffic model, Lym et al., ISPASS
-- 2019, on the time-based roofline of Wang et al., arXiv 2009.04598). Per kernel the terms of T_min = max(F_p / P_p
-- over its pipes, Q_l / W_l over the levels, t_o) are recomputed with each pipe's peak, each level's bandwidth and
-- the launch overhead multiplied by its scale; the kernel keeps its measured inefficiency s = T / T_min, so its
-- predicted time is s * T_min'. A kernel without a known T_min (no counters or no roofs) keeps its measured time
-- (modelled = false). Layers (NVTX depth $depth) and the run sum their kernels; share_of_predicted says which layers
-- hold the predicted total: the ones that stop improving are where the next bottleneck is (Amdahl over layers).
-- The roofs (P_p, W_l) are those kernel_roofs gives: the report's own per-launch peaks from plain SQL; rl whatif
-- --ceilings shadows kernel_roofs with another source's (rooflake.views.ceilings.run_roofs) and names it in
-- $ceilings_source and $ceilings_machine, which every row carries, so a modelled number says what it is modelled
-- against.
-- Parameters: $run_id, $launch_overhead_ns, $scale_fp64 = 1, $scale_fp32 = 1, $scale_fp16 = 1, $scale_tensor = 1,
-- $scale_l1 = 1, $scale_l2 = 1, $scale_dram = 1, $scale_launch = 1, $depth = 1, $ceilings_source = 'ncu-report',
-- $ceilings_machine = NULL.
-- Columns:
--   run_id                run
--   grain                 kernel | layer | run: what one row is
--   kernel_id             kernel (NULL for layers and the run)
--   layer                 the kernel's NVTX layer at $depth (nvtx_layer); the run row: NULL
--   name                  kernels: short name; layers: the layer; run: '(run)'
--   n_kernels             launches summed (1 for a kernel)
--   duration_ns           ns, measured T (sums for layers and the run, over the timed launches)
--   t_min_ns              ns, T_min with the unscaled roofs of ceilings_source (sums over modelled kernels)
--   inefficiency          s = T / T_min (layers and run: over their modelled kernels)
--   bound                 the largest term with the unscaled roofs (kernels only)
--   t_min_scaled_ns       ns, T_min' with the scaled ceilings (sums over modelled kernels)
--   bound_scaled          the largest term with the scaled ceilings (kernels only): FP64 | FP32 | FP16 | TENSOR |
--                         L1 | L2 | DRAM | launch_overhead
--   predicted_ns          ns, s * T_min' for modelled kernels, T for the others (sums for layers and the run, over
--                         the timed launches)
--   speedup               duration_ns / predicted_ns
--   share_of_predicted    predicted_ns / the run's predicted_ns
--   modelled              kernels: T_min and its compute term known (the prediction is a model: with the compute
--                         term unknown, a missing roof or FLOP counter, scaling could not be modelled); layers/run:
--                         every kernel modelled
--   bound_ceiling         kernels: the roof behind `bound`, named as the roofs' rows name their ceiling
--                         (source_run_ceilings, run_ceilings): DRAM | L2 | L1 | FP64 | FP32 | FP16 | the kernel's
--                         tensor roof (kernel_roofline.peak_ceiling, e.g. 'TENSOR FP16→FP32') | launch_overhead
--                         (t_o); layers/run: NULL
--   bound_scaled_ceiling  kernels: the roof behind `bound_scaled`, named the same way (scaled there by its
--                         --scale factor); layers/run: NULL
--   ceilings_source       the source of the roofs every T_min above is computed against (ceilings.source):
--                         ncu-report (the report's peak_sustained x each launch's clock) | measured | ert | ert-spec |
--                         datasheet (boost clock) ($ceilings_source; NULL when the run's machine has no roofs, and
--                         then no kernel is modelled)
--   ceilings_machine      the machine those roofs are of, as their rows' machine_key: report 'gpu|cc|SM clock' of
--                         the profiled clock (e.g. 'NVIDIA H100 PCIe|9.0|1095MHz'), datasheet the catalog GPU
--                         ('H100 PCIe'), ERT/measured the machine named ($ceilings_machine; NULL from plain SQL)
--   unknown_terms         terms of T_min left out for lack of a counter or a roof (compute, L1, L2, DRAM; as
--                         time_roofline); layers/run: union over their kernels
--   untimed               launches without a measured duration (NaN: a failed replay; NULL), left out of the sums of
--                         duration_ns and predicted_ns (kernels: 1 or 0)
WITH t AS (
    SELECT * FROM time_roofline($run_id, $launch_overhead_ns, 'parameter') WHERE grain = 'kernel'
),
pipes AS (
    SELECT
        kernel_id,
        precision,
        peak_ceiling,
        CASE WHEN flops >= 0 AND NOT isnan(flops) AND peak_flops_per_s > 0 AND NOT isnan(peak_flops_per_s)
            THEN flops / (peak_flops_per_s * CASE precision
                WHEN 'fp64' THEN $scale_fp64 WHEN 'fp32' THEN $scale_fp32
                WHEN 'fp16' THEN $scale_fp16 ELSE $scale_tensor END) * 1e9
        END AS compute_ns
    FROM kernel_roofline
    WHERE run_id = $run_id
),
pipe AS (
    SELECT kernel_id, arg_max(upper(precision), compute_ns) AS pipe, max(compute_ns) AS compute_ns
    FROM pipes GROUP BY kernel_id
),
-- the ceiling each pipe's term divides by, to name a pipe bound (the tensor roof is the kernel's own)
roof AS (
    SELECT DISTINCT kernel_id, upper(precision) AS pipe, peak_ceiling FROM pipes
),
terms AS (
    SELECT
        t.*,
        p.pipe,
        CASE WHEN t.compute_time_ns IS NOT NULL THEN p.compute_ns END AS compute_scaled_ns,  -- (unknown: unknown)
        t.l1_time_ns / $scale_l1 AS l1_scaled_ns,
        t.l2_time_ns / $scale_l2 AS l2_scaled_ns,
        t.dram_time_ns / $scale_dram AS dram_scaled_ns,
        $launch_overhead_ns / $scale_launch AS launch_scaled_ns
    FROM t LEFT JOIN pipe AS p USING (kernel_id)
),
k AS (
    SELECT
        x.run_id,
        x.kernel_id,
        nvtx_layer(kn.nvtx_domain, kn.nvtx_stack, $depth) AS layer,
        x.short_name AS name,
        x.duration_ns,
        x.t_min_ns,
        x.inefficiency,
        x.bound,
        CASE WHEN x.t_min_ns IS NOT NULL AND x.compute_time_ns IS NOT NULL THEN greatest(
            x.compute_scaled_ns, x.l1_scaled_ns, x.l2_scaled_ns, x.dram_scaled_ns, x.launch_scaled_ns
        ) END AS t_min_scaled_ns,
        x.t_min_ns IS NOT NULL AND x.compute_time_ns IS NOT NULL AND x.inefficiency IS NOT NULL AS modelled,
        x.unknown_terms,
        x.pipe,
        x.compute_scaled_ns,
        x.l1_scaled_ns,
        x.l2_scaled_ns,
        x.dram_scaled_ns,
        x.launch_scaled_ns
    FROM terms AS x JOIN kernels AS kn ON kn.run_id = x.run_id AND kn.kernel_id = x.kernel_id
),
kp AS (
    SELECT
        *,
        CASE WHEN t_min_scaled_ns IS NULL THEN NULL
            WHEN compute_scaled_ns = t_min_scaled_ns THEN pipe
            WHEN dram_scaled_ns = t_min_scaled_ns THEN 'DRAM'
            WHEN l2_scaled_ns = t_min_scaled_ns THEN 'L2'
            WHEN l1_scaled_ns = t_min_scaled_ns THEN 'L1'
            ELSE 'launch_overhead'
        END AS bound_scaled,
        CASE WHEN modelled THEN inefficiency * t_min_scaled_ns ELSE duration_ns END AS predicted_ns,
        duration_ns IS NOT NULL AND NOT isnan(duration_ns) AS timed  -- (a failed replay's NaN: out of the sums)
    FROM k
),
rows AS (
    SELECT
        kp.run_id, 'kernel' AS grain, kp.kernel_id, layer, name, 1 AS n_kernels, duration_ns, t_min_ns,
        inefficiency, bound, t_min_scaled_ns, bound_scaled, predicted_ns, modelled,
        CASE WHEN bound IN ('DRAM', 'L2', 'L1', 'launch_overhead') THEN bound ELSE r.peak_ceiling END
            AS bound_ceiling,
        CASE WHEN bound_scaled IN ('DRAM', 'L2', 'L1', 'launch_overhead') THEN bound_scaled ELSE rs.peak_ceiling END
            AS bound_scaled_ceiling,
        unknown_terms, (NOT timed)::INTEGER AS untimed
    FROM kp
    LEFT JOIN roof AS r ON r.kernel_id = kp.kernel_id AND r.pipe = kp.bound
    LEFT JOIN roof AS rs ON rs.kernel_id = kp.kernel_id AND rs.pipe = kp.bound_scaled
    UNION ALL
    SELECT
        run_id, 'layer', NULL, layer, layer, count(*), sum(duration_ns) FILTER (WHERE timed),
        sum(t_min_ns) FILTER (WHERE modelled),
        sum(duration_ns) FILTER (WHERE modelled) / sum(t_min_ns) FILTER (WHERE modelled), NULL,
        sum(t_min_scaled_ns) FILTER (WHERE modelled), NULL, sum(predicted_ns) FILTER (WHERE timed), bool_and(modelled),
        NULL, NULL, list_sort(list_distinct(flatten(list(unknown_terms)))), count(*) FILTER (WHERE NOT timed)
    FROM kp GROUP BY run_id, layer
    UNION ALL
    SELECT
        run_id, 'run', NULL, NULL, '(run)', count(*), sum(duration_ns) FILTER (WHERE timed),
        sum(t_min_ns) FILTER (WHERE modelled),
        sum(duration_ns) FILTER (WHERE modelled) / sum(t_min_ns) FILTER (WHERE modelled), NULL,
        sum(t_min_scaled_ns) FILTER (WHERE modelled), NULL, sum(predicted_ns) FILTER (WHERE timed), bool_and(modelled),
        NULL, NULL, list_sort(list_distinct(flatten(list(unknown_terms)))), count(*) FILTER (WHERE NOT timed)
    FROM kp GROUP BY run_id
)
SELECT
    run_id,
    grain,
    kernel_id,
    layer,
    name,
    n_kernels,
    duration_ns,
    t_min_ns,
    inefficiency,
    bound,
    t_min_scaled_ns,
    bound_scaled,
    predicted_ns,
    duration_ns / predicted_ns AS speedup,
    predicted_ns / sum(predicted_ns) FILTER (WHERE grain = 'run') OVER () AS share_of_predicted,
    modelled,
    bound_ceiling,
    bound_scaled_ceiling,
    $ceilings_source::VARCHAR AS ceilings_source,
    $ceilings_machine::VARCHAR AS ceilings_machine,
    unknown_terms,
    untimed
FROM rows
ORDER BY CASE grain WHEN 'run' THEN 0 WHEN 'layer' THEN 1 ELSE 2 END, predicted_ns DESC, kernel_id
