-- ops_gpu_time: the recorded ops of a trace (op_rows: the ops table without its GPU columns) with the GPU work each
-- launched: the kernels (kernel_launches) and memcpys/memsets (memop_launches) whose launch call ran on the op's
-- thread while the op was open (start_ns <= launch_start_ns < start_ns + cpu_time_ns), its nested ops' launches
-- included. A launch without a launch row (no launch_thread) belongs to no op.
-- Columns: op_rows' columns, then
--   kernels      kernels launched under the op
--   gpu_ops      kernels, memcpys and memsets launched under the op
--   gpu_time_ns  ns, sum of their durations (measured; NULL where none was launched)
WITH launches AS (
    SELECT launch_thread, launch_start_ns, duration_ns, 1 AS is_kernel FROM kernel_launches
    WHERE launch_thread IS NOT NULL AND launch_start_ns IS NOT NULL
    UNION ALL
    SELECT launch_thread, launch_start_ns, duration_ns, 0 AS is_kernel FROM memop_launches
    WHERE launch_thread IS NOT NULL AND launch_start_ns IS NOT NULL
),
per_op AS (
    SELECT
        o.op_id,
        sum(l.is_kernel)::BIGINT AS kernels,
        count(*)::BIGINT AS gpu_ops,
        round(sum(l.duration_ns))::BIGINT AS gpu_time_ns
    FROM op_rows AS o
    JOIN launches AS l
        ON l.launch_thread = o.thread
        AND l.launch_start_ns >= o.start_ns
        AND l.launch_start_ns < o.start_ns + o.cpu_time_ns
    GROUP BY o.op_id
)
SELECT o.*, coalesce(p.kernels, 0) AS kernels, coalesce(p.gpu_ops, 0) AS gpu_ops, p.gpu_time_ns
FROM op_rows AS o
LEFT JOIN per_op AS p USING (op_id)
ORDER BY o.op_id
