-- layer_summary: GPU work per NVTX layer at every depth of the NVTX stack: kernels, launches, GPU time and its
-- share, and where ncu counters exist FLOPs per precision, bytes per level, arithmetic intensity and FLOP/s.
-- At depth d a kernel belongs to the first d names of its stack (kernels with a shorter stack stay under their
-- full path), so the shares of one depth sum to 1 per run and device. GPU work outside every NVTX range is the
-- layer '(no NVTX range)'. Memcpy/memset count in GPU time (not in kernels or FLOPs). NaN durations (failed ncu
-- replays) are left out of the time sums and counted in nan_durations; a launch whose FLOPs or duration are NaN
-- (a failed replay: kernel_roofline keeps its NaN and flags it) counts as one without counters, so that it neither
-- turns its layer's sums into NaN nor lets counters_complete say true. Filter with e.g.
-- `WHERE run_id = $run_id AND depth = 2 AND regexp_matches(layer, 'encoder')`.
-- Columns:
--   run_id                 run
--   device_id              CUDA device (GPU time shares are per device: sum over devices on request)
--   depth                  1 = outermost range
--   layer                  domain:outer/.../name at this depth, or '(no NVTX range)'
--   kernels                distinct kernel names (short_name)
--   launches               kernel launches
--   memops                 memcpy + memset operations
--   gpu_time_ns            ns, kernels + memops
--   kernel_time_ns         ns, kernels only
--   share_of_gpu_time      gpu_time_ns / the run's and device's GPU time
--   nan_durations          launches whose duration is NaN
--   flops_fp64             FLOP of FP64 (NULL without ncu counters)
--   flops_fp32             FLOP of FP32
--   flops_fp16             FLOP of FP16
--   flops_tensor           FLOP (ops) on the Tensor Cores
--   flops                  FLOP, over the precisions the report counted (macro flops_total)
--   bytes_l1               byte at L1
--   bytes_l2               byte at L2
--   bytes_dram             byte at DRAM
--   ai_l1                  FLOP/byte = flops / bytes_l1
--   ai_l2                  FLOP/byte = flops / bytes_l2
--   ai_dram                FLOP/byte = flops / bytes_dram
--   launches_with_counters launches whose kernel has FLOP counters (ncu, or an nsys kernel matched to ncu), with a
--                          FLOP count and a duration that are not NaN; the FLOP and byte columns sum over them
--   counted_time_ns        ns, kernel time of those launches
--   flops_per_s            FLOP/s = flops / counted_time (Wang et al., time-weighted per-layer roofline); launches
--                          without counters are left out of both, never counted as 0 FLOPs
--   counters_complete      every launch of the layer has counters (else FLOPs, AI and FLOP/s cover a part of it)
WITH ops AS (
    SELECT
        run_id, device_id, 'kernel' AS op_kind, short_name, duration_ns, nvtx_domain, nvtx_stack,
        flops_fp64, flops_fp32, flops_fp16, flops_tensor,
        flops_total(flops_fp64, flops_fp32, flops_fp16, flops_tensor) AS flops,
        bytes_l1, bytes_l2, bytes_dram
    FROM kernels
    UNION ALL
    SELECT
        run_id, device_id, kind, NULL, duration_ns::DOUBLE, nvtx_domain, nvtx_stack,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM memops
),
depths AS (
    SELECT run_id, greatest(max(coalesce(len(nvtx_stack), 0)), 1) AS max_depth FROM ops GROUP BY run_id
),
exploded AS (
    SELECT
        o.*,
        unnest(range(1, d.max_depth + 1)) AS depth
    FROM ops AS o JOIN depths AS d USING (run_id)
),
labelled AS (
    SELECT
        *,
        nvtx_layer(nvtx_domain, nvtx_stack, depth) AS layer,
        CASE WHEN isnan(duration_ns) THEN NULL ELSE duration_ns END AS valid_duration_ns,
        op_kind = 'kernel' AND flops IS NOT NULL AND NOT isnan(flops) AND NOT isnan(duration_ns) AS counted
    FROM exploded
),
agg AS (
    SELECT
        run_id, device_id, depth, layer,
        count(DISTINCT short_name) FILTER (WHERE op_kind = 'kernel') AS kernels,
        count(*) FILTER (WHERE op_kind = 'kernel') AS launches,
        count(*) FILTER (WHERE op_kind <> 'kernel') AS memops,
        coalesce(sum(valid_duration_ns), 0) AS gpu_time_ns,
        coalesce(sum(valid_duration_ns) FILTER (WHERE op_kind = 'kernel'), 0) AS kernel_time_ns,
        count(*) FILTER (WHERE isnan(duration_ns)) AS nan_durations,
        count(*) FILTER (WHERE counted) AS launches_with_counters,
        coalesce(sum(valid_duration_ns) FILTER (WHERE counted), 0) AS counted_time_ns,
        sum(flops_fp64) FILTER (WHERE counted) AS flops_fp64, sum(flops_fp32) FILTER (WHERE counted) AS flops_fp32,
        sum(flops_fp16) FILTER (WHERE counted) AS flops_fp16, sum(flops_tensor) FILTER (WHERE counted) AS flops_tensor,
        sum(flops) FILTER (WHERE counted) AS flops,
        sum(bytes_l1) FILTER (WHERE counted) AS bytes_l1, sum(bytes_l2) FILTER (WHERE counted) AS bytes_l2,
        sum(bytes_dram) FILTER (WHERE counted) AS bytes_dram
    FROM labelled
    GROUP BY run_id, device_id, depth, layer
)
SELECT
    run_id, device_id, depth, layer, kernels, launches, memops, gpu_time_ns, kernel_time_ns,
    gpu_time_ns / nullif(sum(gpu_time_ns) OVER (PARTITION BY run_id, device_id, depth), 0) AS share_of_gpu_time,
    nan_durations,
    flops_fp64, flops_fp32, flops_fp16, flops_tensor, flops, bytes_l1, bytes_l2, bytes_dram,
    flops / nullif(bytes_l1, 0) AS ai_l1,
    flops / nullif(bytes_l2, 0) AS ai_l2,
    flops / nullif(bytes_dram, 0) AS ai_dram,
    launches_with_counters,
    counted_time_ns,
    flops * 1e9 / nullif(counted_time_ns, 0) AS flops_per_s,
    launches_with_counters = launches AS counters_complete
FROM agg
ORDER BY run_id, device_id, depth, gpu_time_ns DESC, layer
