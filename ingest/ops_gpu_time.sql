-- ops_gpu_time: the recorded ops of a trace (op_rows: op_id, thread, start_ns, cpu_time_ns of each) with the GPU work each
-- launched: the kernels (kernel_launches) and memcpys/memsets (memop_launches) whose launch call ran on the op's
-- thread while the op was open (start_ns <= launch_start_ns < start_ns + cpu_time_ns), its nested ops' launches
-- included. A launch without a launch row (no launch_thread) belongs to no op.
-- How: per thread, the launches' running totals in launch order (count, kernels, durations in integer ps, so that
-- every sum is exact); an op's totals are those before its end minus those before its start (two ASOF joins: a
-- sort-merge, where a join on the thread with the two time conditions compared every op with every launch of its
-- thread).
-- Columns (one row per op, in op_id order):
--   op_id        the op (op_rows.op_id)
--   kernels      kernels launched under the op
--   gpu_ops      kernels, memcpys and memsets launched under the op
--   gpu_time_ns  ns, sum of their durations (measured; NULL where none was launched or none has a duration)
WITH launches AS (
    SELECT launch_thread, launch_start_ns, duration_ns, 1 AS is_kernel FROM kernel_launches
    WHERE launch_thread IS NOT NULL AND launch_start_ns IS NOT NULL
    UNION ALL
    SELECT launch_thread, launch_start_ns, duration_ns, 0 AS is_kernel FROM memop_launches
    WHERE launch_thread IS NOT NULL AND launch_start_ns IS NOT NULL
),
at_time AS (  -- the launches of a thread at one time, together (a running total then covers them all)
    SELECT
        launch_thread AS thread,
        launch_start_ns AS t,
        count(*) AS n,
        sum(is_kernel) AS k,
        count(duration_ns) AS timed,
        coalesce(sum(round(duration_ns * 1000)::HUGEINT), 0) AS ps
    FROM launches
    GROUP BY ALL
),
running AS (
    SELECT
        thread,
        t,
        sum(n) OVER w AS n,
        sum(k) OVER w AS k,
        sum(timed) OVER w AS timed,
        sum(ps) OVER w AS ps
    FROM at_time
    WINDOW w AS (PARTITION BY thread ORDER BY t ROWS UNBOUNDED PRECEDING)
),
per_op AS (
    SELECT
        o.op_id,
        coalesce(e.n, 0) - coalesce(s.n, 0) AS n,
        coalesce(e.k, 0) - coalesce(s.k, 0) AS k,
        coalesce(e.timed, 0) - coalesce(s.timed, 0) AS timed,
        coalesce(e.ps, 0) - coalesce(s.ps, 0) AS ps
    FROM op_rows AS o
    ASOF LEFT JOIN running AS s ON o.thread = s.thread AND o.start_ns > s.t
    ASOF LEFT JOIN running AS e ON o.thread = e.thread AND o.start_ns + o.cpu_time_ns > e.t
    WHERE o.cpu_time_ns > 0  -- (an op open for no time, or with no end, launched nothing)
)
SELECT
    o.op_id,
    coalesce(p.k, 0)::BIGINT AS kernels,
    coalesce(p.n, 0)::BIGINT AS gpu_ops,
    CASE WHEN p.timed > 0 THEN ((p.ps + 500) // 1000)::BIGINT END AS gpu_time_ns
FROM op_rows AS o
LEFT JOIN per_op AS p USING (op_id)
ORDER BY o.op_id
