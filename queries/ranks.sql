-- ranks: each rank of a distributed job (the runs whose runs.job = $job), per profiler step: its GPU time split
-- into compute, communication (collective kernels: is_collective) and idle, and the straggler of each step. A
-- kernel or memop belongs to the ProfilerStep#N range (torch.profiler's step annotation) whose CPU span holds its
-- launch (launch_start_ns), as HTA assigns iterations; work launched outside every step, and every GPU op of a run
-- without steps, forms the row whose step is NULL. Times are unions of GPU intervals over every stream of the rank
-- (overlapping kernels on several streams counted once: gaps-and-islands over the sorted intervals), so
-- compute + comm - overlap + memcpy/memset time not under a kernel = gpu_time, and gpu_time + idle = span.
-- A rank without GPU ops has one row, its times NULL.
-- Parameters: $job.
-- Columns:
--   job                     VARCHAR  -     the job (runs.job)
--   run_id                  VARCHAR  -     the rank's run
--   rank                    BIGINT   -     runs.rank (NULL: neither the file nor a label says it)
--   world_size              BIGINT   -     runs.world_size
--   step                    VARCHAR  -     the ProfilerStep#N range, NULL for work outside every step
--   step_number             BIGINT   -     N of ProfilerStep#N
--   kernels                 BIGINT   -     kernel launches in the step
--   collectives             BIGINT   -     of which collective kernels
--   span_ns                 BIGINT   ns    first GPU start to last GPU end of the step's kernels and memops
--   gpu_time_ns             BIGINT   ns    union of the busy intervals (kernels, memcpy, memset)
--   compute_time_ns         BIGINT   ns    union of the non-collective kernels
--   comm_time_ns            BIGINT   ns    union of the collective kernels
--   overlap_time_ns         BIGINT   ns    compute and communication at once (compute + comm - union of kernels)
--   idle_time_ns            BIGINT   ns    span_ns - gpu_time_ns: no kernel or copy running
--   idle_share              DOUBLE   -     idle_time_ns / span_ns
--   comm_overlap_share      DOUBLE   -     overlap_time_ns / comm_time_ns (HTA's comp_comm_overlap)
--   median_compute_time_ns  DOUBLE   ns    median over the job's ranks of the step's compute_time_ns
--   gap_to_median_ns        DOUBLE   ns    compute_time_ns - median_compute_time_ns
--   straggler               BOOLEAN  -     the rank with the most compute time in the step (lowest rank on a tie;
--                                          false where one rank has the step): the one the others wait for
WITH r AS (
    SELECT run_id, rank, world_size, job FROM runs WHERE job = $job
),
steps AS (
    SELECT
        g.run_id, g.name AS step,
        TRY_CAST(regexp_extract(g.name, '^ProfilerStep#([0-9]+)$', 1) AS BIGINT) AS step_number,
        g.start_ns, g.end_ns
    FROM ranges AS g SEMI JOIN r ON g.run_id = r.run_id
    WHERE regexp_matches(g.name, '^ProfilerStep#[0-9]+$') AND g.start_ns IS NOT NULL AND g.end_ns IS NOT NULL
),
work AS (
    SELECT k.run_id, k.start_ns, k.end_ns, k.launch_start_ns,
           CASE WHEN is_collective(k.name) THEN 'comm' ELSE 'compute' END AS kind
    FROM kernels AS k SEMI JOIN r ON k.run_id = r.run_id
    UNION ALL
    SELECT m.run_id, m.start_ns, m.end_ns, m.launch_start_ns, 'memory' AS kind
    FROM memops AS m SEMI JOIN r ON m.run_id = r.run_id
),
placed AS (
    SELECT w.run_id, w.start_ns, w.end_ns, w.kind, s.step, s.step_number
    FROM work AS w
    LEFT JOIN steps AS s
        ON s.run_id = w.run_id AND w.launch_start_ns >= s.start_ns AND w.launch_start_ns < s.end_ns
    WHERE w.start_ns IS NOT NULL AND w.end_ns IS NOT NULL AND w.end_ns >= w.start_ns
),
tagged AS (
    SELECT run_id, step, start_ns, end_ns, 'busy' AS cls FROM placed
    UNION ALL
    SELECT run_id, step, start_ns, end_ns, 'kernels' AS cls FROM placed WHERE kind <> 'memory'
    UNION ALL
    SELECT run_id, step, start_ns, end_ns, kind AS cls FROM placed WHERE kind <> 'memory'
),
reached AS (
    SELECT *, max(end_ns) OVER (
        PARTITION BY run_id, step, cls ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
    ) AS reach
    FROM tagged
),
islands AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR start_ns > reach THEN 1 ELSE 0 END) OVER (
        PARTITION BY run_id, step, cls ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING
    ) AS island
    FROM reached
),
merged AS (
    SELECT run_id, step, cls, max(end_ns) - min(start_ns) AS ns FROM islands GROUP BY run_id, step, cls, island
),
unions AS (
    SELECT
        run_id, step,
        sum(ns) FILTER (WHERE cls = 'busy') AS busy_ns,
        coalesce(sum(ns) FILTER (WHERE cls = 'kernels'), 0) AS kernels_ns,
        coalesce(sum(ns) FILTER (WHERE cls = 'compute'), 0) AS compute_ns,
        coalesce(sum(ns) FILTER (WHERE cls = 'comm'), 0) AS comm_ns
    FROM merged GROUP BY run_id, step
),
per AS (
    SELECT
        run_id, step, any_value(step_number) AS step_number,
        count(*) FILTER (WHERE kind <> 'memory') AS kernels,
        count(*) FILTER (WHERE kind = 'comm') AS collectives,
        max(end_ns) - min(start_ns) AS span_ns
    FROM placed GROUP BY run_id, step
),
rows AS (
    SELECT
        r.job, r.run_id, r.rank, r.world_size, p.step, p.step_number, p.kernels, p.collectives, p.span_ns,
        u.busy_ns::BIGINT AS gpu_time_ns,
        u.compute_ns::BIGINT AS compute_time_ns,
        u.comm_ns::BIGINT AS comm_time_ns,
        (u.compute_ns + u.comm_ns - u.kernels_ns)::BIGINT AS overlap_time_ns,
        (p.span_ns - u.busy_ns)::BIGINT AS idle_time_ns
    FROM r
    LEFT JOIN per AS p ON p.run_id = r.run_id
    LEFT JOIN unions AS u ON u.run_id = p.run_id AND u.step IS NOT DISTINCT FROM p.step
)
SELECT
    job, run_id, rank, world_size, step, step_number, kernels, collectives, span_ns, gpu_time_ns, compute_time_ns,
    comm_time_ns, overlap_time_ns, idle_time_ns,
    idle_time_ns / nullif(span_ns, 0) AS idle_share,
    overlap_time_ns / nullif(comm_time_ns, 0) AS comm_overlap_share,
    median(compute_time_ns) OVER w AS median_compute_time_ns,
    compute_time_ns - median(compute_time_ns) OVER w AS gap_to_median_ns,
    coalesce(
        count(compute_time_ns) OVER w > 1
        AND row_number() OVER (PARTITION BY step ORDER BY compute_time_ns DESC NULLS LAST, rank, run_id) = 1,
        false
    ) AS straggler
FROM rows
WINDOW w AS (PARTITION BY step)
ORDER BY step_number NULLS LAST, step, rank NULLS LAST, run_id
