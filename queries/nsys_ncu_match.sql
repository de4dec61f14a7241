-- nsys_ncu_match: every kernel of an Nsight Systems run with the FLOPs and bytes of its Nsight Compute twin from
-- another run of the same program. ncu measures what a kernel does (in isolated replay); nsys when it really ran.
-- Matching: (nvtx_path, kernel name, occurrence index in launch order) first; kernels left over on either side by (name,
-- occurrence index); remaining nsys launches of a kernel name ncu profiled (ncu usually profiles a subset, e.g.
-- --launch-count) take the mean per launch of that name. So per layer, FLOPs/bytes = ncu's per-launch values
-- scaled by nsys's launch counts, and time = nsys's real durations (time-weighted per-layer roofline).
-- Parameters: $nsys_run, $ncu_run.
-- Columns:
--   kernels.*            every column of `kernels` for the nsys run, in its order (durations, nvtx_path, device...),
--                        flops_* and bytes_* replaced by the matched ncu values (FLOP, byte; NULL when unmatched)
--   ncu_kernel_id        kernel_id in the ncu run (NULL for name_mean and unmatched)
--   match                path_name_occurrence | name_occurrence | name_mean | NULL (unmatched)
WITH n AS (
    -- launch order (as ncu profiles them), not GPU start order, which streams interleave
    SELECT *, row_number() OVER (
        PARTITION BY coalesce(nvtx_path, ''), name ORDER BY launch_start_ns NULLS LAST, correlation_id, kernel_id
    ) AS occ
    FROM kernels WHERE run_id = $nsys_run
),
c AS (
    SELECT *, row_number() OVER (PARTITION BY coalesce(nvtx_path, ''), name ORDER BY kernel_id) AS occ
    FROM kernels WHERE run_id = $ncu_run
),
m1 AS (
    SELECT n.kernel_id AS nk, c.kernel_id AS ck
    FROM n JOIN c ON coalesce(n.nvtx_path, '') = coalesce(c.nvtx_path, '') AND n.name = c.name AND n.occ = c.occ
),
n2 AS (
    SELECT kernel_id, name, row_number() OVER (
        PARTITION BY name ORDER BY launch_start_ns NULLS LAST, correlation_id, kernel_id
    ) AS occ
    FROM n WHERE kernel_id NOT IN (SELECT nk FROM m1)
),
c2 AS (
    SELECT kernel_id, name, row_number() OVER (PARTITION BY name ORDER BY kernel_id) AS occ
    FROM c WHERE kernel_id NOT IN (SELECT ck FROM m1)
),
m2 AS (
    SELECT n2.kernel_id AS nk, c2.kernel_id AS ck FROM n2 JOIN c2 ON n2.name = c2.name AND n2.occ = c2.occ
),
means AS (
    SELECT name, avg(flops_fp64) AS flops_fp64, avg(flops_fp32) AS flops_fp32, avg(flops_fp16) AS flops_fp16,
           avg(flops_tensor) AS flops_tensor, avg(bytes_l1) AS bytes_l1, avg(bytes_l2) AS bytes_l2,
           avg(bytes_dram) AS bytes_dram
    FROM c GROUP BY name
),
matched AS (
    SELECT
        n.kernel_id,
        coalesce(m1.ck, m2.ck) AS ncu_kernel_id,
        CASE WHEN m1.ck IS NOT NULL THEN 'path_name_occurrence' WHEN m2.ck IS NOT NULL THEN 'name_occurrence'
             WHEN mean.name IS NOT NULL THEN 'name_mean' END AS match
    FROM n
    LEFT JOIN m1 ON m1.nk = n.kernel_id
    LEFT JOIN m2 ON m2.nk = n.kernel_id
    LEFT JOIN means AS mean ON mean.name = n.name
)
SELECT
    n.* EXCLUDE (occ) REPLACE (
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.flops_fp64 ELSE mean.flops_fp64 END AS flops_fp64,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.flops_fp32 ELSE mean.flops_fp32 END AS flops_fp32,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.flops_fp16 ELSE mean.flops_fp16 END AS flops_fp16,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.flops_tensor ELSE mean.flops_tensor END AS flops_tensor,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.bytes_l1 ELSE mean.bytes_l1 END AS bytes_l1,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.bytes_l2 ELSE mean.bytes_l2 END AS bytes_l2,
        CASE WHEN m.ncu_kernel_id IS NOT NULL THEN c.bytes_dram ELSE mean.bytes_dram END AS bytes_dram
    ),
    m.ncu_kernel_id,
    m.match
FROM n
JOIN matched AS m USING (kernel_id)
LEFT JOIN c ON c.kernel_id = m.ncu_kernel_id
LEFT JOIN means AS mean ON mean.name = n.name AND m.ncu_kernel_id IS NULL
ORDER BY n.kernel_id
