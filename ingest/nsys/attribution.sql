-- attribution: every GPU operation (kernel, memcpy, memset) attributed to the NVTX ranges open on the CPU thread that
-- launched it, at the launch call's time (rooflake.ingest.nsys_sqlite; the reader purges DuckDB's allocator after
-- this file).
-- Needs: range_pid and paths (nsys/stacks.sql, nsys/paths.sql). Creates: ops_out (one row
-- per GPU operation: uid; op_kind, idx (kernel_id, op_id), src_row (its rowid: the output joins the source's other
-- columns by it); its launch call; path_id, attribution (reason, an attribution_kind)) and op_se (uid, names: the
-- start/end ranges open at the launch call of an operation that has some). The output joins op_se and op_flags
-- (nsys/launches.sql) by uid for the lists they hold: ops_out is the build side of the kernels' hash join, one row
-- per kernel, and the two lists in it (NULL in nearly every row) and the reason as text cost 16 bytes a row each
-- there. At the x8 copy (1.2M kernels), with the launch call's API name as an id (launches.sql): that hash table
-- 148 MB instead of 176, the write's peak 423-445 MiB instead of 449-467, in no more time.
-- Columns: none (statements only).

-- why an operation has the NVTX path it has (kernels.attribution, memops.attribution); in alphabetical order, so
-- that ordering by it is ordering by its text
CREATE TYPE attribution_kind AS ENUM ('no_launch_row', 'no_range_open', 'other_thread', 'push_pop', 'start_end');

-- start/end ranges open anywhere in the launching process at launch time
CREATE TEMP TABLE op_se AS
SELECT o.uid, list(r.name ORDER BY r.start_ns, r.range_id) AS names
FROM ops AS o
JOIN (SELECT * FROM ranges_named WHERE kind = 'start_end') AS r
    ON r.process_id = o.process_id
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807)
GROUP BY o.uid;

-- operations with no range on their own thread: was a push/pop range open on another thread of the process?
CREATE TEMP TABLE op_other AS
SELECT DISTINCT o.uid
FROM (SELECT * FROM ops WHERE launch_thread IS NOT NULL AND uid NOT IN (SELECT uid FROM op_inner)) AS o
JOIN push_pop AS r
    ON process_of(r.thread) = o.process_id
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807);

-- (in the work database, nsys/work_db.sql, as ops)
CREATE TABLE ops_out AS
SELECT
    o.*, lp.pid AS path_id,
    -- (each value cast, not the CASE: a cast of the CASE's text runs on every row)
    CASE
        WHEN lp.pid IS NOT NULL THEN 'push_pop'::attribution_kind
        WHEN o.launch_thread IS NULL THEN 'no_launch_row'::attribution_kind
        WHEN se.uid IS NOT NULL THEN 'start_end'::attribution_kind
        WHEN ot.uid IS NOT NULL THEN 'other_thread'::attribution_kind
        ELSE 'no_range_open'::attribution_kind
    END AS attribution
FROM ops AS o
LEFT JOIN op_inner AS i USING (uid)
LEFT JOIN range_pid AS lp ON lp.id = i.innermost
LEFT JOIN op_se AS se USING (uid)
LEFT JOIN op_other AS ot USING (uid);

DROP TABLE ops;
DROP TABLE op_inner;
DROP TABLE range_pid;
DROP TABLE op_other;
