-- range_times: CPU-side time per NVTX range path (push/pop ranges of an nsys export): how often each path was
-- open, its inclusive time (end - start) and its exclusive time (inclusive minus the inclusive time of the ranges
-- directly inside it, on the same thread and domain). This is the per-layer time of a run without GPU kernels (a
-- CPU run of an annotated model: `rl profile --nsys --trace nvtx,osrt`), and the CPU side of a GPU run. A range
-- path is its domain and the names of the ranges enclosing it, outermost first: the text nvtx_layer() gives
-- kernels (`domain:forward/layer1/layer1.0`), so CPU and GPU time of a layer join on `layer`. Ranges never closed
-- are counted in `unclosed` and left out of the times. Filter with e.g. `WHERE run_id = $run_id AND depth <= 2`.
-- Columns:
--   run_id         run
--   domain         NVTX domain ('<default domain>' for the default one)
--   layer          domain:outer/.../name, the range's path (names may contain '/': `stack` keeps them whole)
--   stack          the names of the path, outermost first (list)
--   name           the range's own name (the last of stack)
--   depth          1 = outermost range
--   parent_layer   layer of the enclosing range (NULL at depth 1)
--   calls          closed ranges with this path
--   unclosed       ranges with this path that were never closed (no end)
--   threads        distinct threads the ranges were on
--   inclusive_ns   ns, sum of end - start over the closed ranges
--   exclusive_ns   ns, inclusive_ns minus the inclusive time of the closed ranges directly inside them
--   mean_inclusive_ns  ns, inclusive_ns / calls
--   share_of_top   inclusive_ns / the inclusive time of the run's depth-1 ranges of the domain
WITH RECURSIVE paths AS (
    SELECT run_id, range_id, domain, [name] AS stack, start_ns, end_ns, thread
    FROM ranges
    WHERE kind = 'push_pop' AND parent_id IS NULL
    UNION ALL
    SELECT r.run_id, r.range_id, r.domain, list_append(p.stack, r.name), r.start_ns, r.end_ns, r.thread
    FROM ranges AS r
    JOIN paths AS p ON r.run_id = p.run_id AND r.parent_id = p.range_id
    WHERE r.kind = 'push_pop'
),
children AS (
    SELECT run_id, parent_id AS range_id, CAST(sum(end_ns - start_ns) AS BIGINT) AS child_ns
    FROM ranges
    WHERE kind = 'push_pop' AND parent_id IS NOT NULL AND end_ns IS NOT NULL
    GROUP BY ALL
),
per_path AS (
    SELECT
        p.run_id,
        p.domain,
        p.domain || ':' || array_to_string(p.stack, '/') AS layer,
        p.stack,
        count(p.end_ns) AS calls,
        count(*) - count(p.end_ns) AS unclosed,
        count(DISTINCT p.thread) AS threads,
        CAST(coalesce(sum(p.end_ns - p.start_ns), 0) AS BIGINT) AS inclusive_ns,
        CAST(coalesce(
            sum(p.end_ns - p.start_ns - coalesce(c.child_ns, 0)) FILTER (WHERE p.end_ns IS NOT NULL), 0
        ) AS BIGINT) AS exclusive_ns
    FROM paths AS p
    LEFT JOIN children AS c ON c.run_id = p.run_id AND c.range_id = p.range_id
    GROUP BY p.run_id, p.domain, p.stack
)
SELECT
    run_id,
    domain,
    layer,
    stack,
    stack[len(stack)] AS name,
    len(stack) AS depth,
    CASE WHEN len(stack) > 1 THEN domain || ':' || array_to_string(stack[1:len(stack) - 1], '/') END AS parent_layer,
    calls,
    unclosed,
    threads,
    inclusive_ns,
    exclusive_ns,
    CASE WHEN calls > 0 THEN inclusive_ns / calls END AS mean_inclusive_ns,
    inclusive_ns / nullif(sum(inclusive_ns) FILTER (WHERE len(stack) = 1) OVER (PARTITION BY run_id, domain), 0)
        AS share_of_top
FROM per_path
