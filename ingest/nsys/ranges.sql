-- ranges: NVTX ranges, their domains, and the setup of the NVTX stack sweep (rooflake.ingest.nsys_sqlite; needs
-- nvtx_raw, strings).
-- Creates: domain_names, pp (the stack sweep's depths and parents, empty), nvtx_swept and nvtx_unswept (views: nvtx_raw
-- with them or without), nvtx_ranges (macro: the ranges of either), r0 (view: one row per range, no depth), range_flags
-- (the ranges whose source rows look wrong, with their flags), push_pop (view), lanes (the lanes of the stack sweep),
-- op_inner and walk_ids (the sweep's other results, empty: rooflake.ingest.nsys_sweep fills them and pp, with the
-- method).
-- Columns: none (statements only).

CREATE TEMP VIEW src_nvtx AS
SELECT n.src_row, n.start, n."end", n.event_type, coalesce(n.text_inline, s.value) AS text,
       coalesce(n.text_inline_hex, s.value_hex) AS text_hex, n.thread, n.end_thread, n.domain_id
FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id;

CREATE TEMP VIEW src_domain AS
SELECT domain_id, any_value(text) AS domain, any_value(text_hex) AS domain_hex
FROM src_nvtx
WHERE nvtx_is_domain_create(event_type)
GROUP BY domain_id;

CREATE TEMP TABLE domain_names AS
SELECT ids.domain_id,
       coalesce(d.domain, CASE WHEN ids.domain_id = 0 THEN '<default domain>' ELSE 'domain ' || ids.domain_id::VARCHAR END)
           AS domain,
       d.domain_hex
FROM (SELECT DISTINCT coalesce(domain_id, 0) AS domain_id FROM nvtx_raw) AS ids
LEFT JOIN src_domain AS d USING (domain_id);

DROP VIEW src_domain;
DROP VIEW src_nvtx;

-- the stack sweep's results per push/pop range (rooflake.ingest.nsys_sweep fills it; in the work database,
-- nsys/work_db.sql): one row per row of nvtx_raw, in its scan order (src_pos: row i is nvtx_raw's row at position i),
-- up to the row of the last push/pop range swept (one in a lane: lanes); none without such ranges. Joined by position
-- (nvtx_swept): no hash table on millions of range ids (at the x8 copy's 5.7M ranges, the ranges output cost ~1 CPU s
-- and ~100 MB less so). A positional join runs on one DuckDB thread (on 2 cores pyarrow's writer is the bottleneck
-- anyway); over a Parquet export (a view with casts: DuckDB's Positional Join, not a positional scan) it buffers pp
-- under DuckDB's memory limit.
--   depth      the range's depth (0: outermost); NULL for a row that is no push/pop range in a lane
--   parent_id  its parent's range_id; NULL at depth 0 and for such a row
CREATE TABLE pp (depth INTEGER, parent_id BIGINT);

-- nvtx_raw with the sweep's depth and parent of each row (the output's ranges; the positional join pads the rows
-- after pp's last with NULLs)
CREATE TEMP VIEW nvtx_swept AS
SELECT n.*, p.depth, p.parent_id FROM nvtx_raw AS n POSITIONAL JOIN pp AS p;

-- nvtx_raw with NULL depths and parents (the attribution's ranges: a plain scan, whose row count DuckDB's planner
-- knows; it takes a positional join's for 0 and put 5.7M ranges on the build side of a hash join)
CREATE TEMP VIEW nvtx_unswept AS
SELECT *, NULL::INTEGER AS depth, NULL::BIGINT AS parent_id FROM nvtx_raw;

-- ranges of src (nvtx_swept or nvtx_unswept): range_id = the event's rowid; text as in the source
CREATE TEMP MACRO nvtx_ranges(src) AS TABLE
SELECT
    n.src_row AS range_id,
    nvtx_range_kind(n.event_type) AS kind,
    coalesce(n.domain_id, 0) AS domain_id,
    n.start AS start_ns,
    CASE WHEN nvtx_is_mark(n.event_type) THEN n.start ELSE n."end" END AS end_ns,
    n.thread,
    process_of(n.thread) AS process_id,
    n.end_thread,
    n.text_inline,
    n.text_inline_hex,
    n.text_id,
    n.depth,
    n.parent_id
FROM query_table(src) AS n
WHERE nvtx_is_range(n.event_type);

-- ranges: one row per range (a view: read from the source where used)
CREATE TEMP VIEW r0 AS FROM nvtx_ranges('nvtx_unswept');

-- ranges whose source rows look wrong, with their flags in a fixed order: no start, end before start, a negative
-- timestamp. A push/pop range with no start or ending before it starts cannot nest: it is left out of push_pop.
CREATE TEMP TABLE range_flags AS
SELECT src_row AS range_id,
       list_filter([
           CASE WHEN start IS NULL THEN 'null_start' END,
           CASE WHEN "end" < start THEN 'reversed_time' END,
           CASE WHEN start < 0 OR "end" < 0 THEN 'negative_time' END
       ], lambda f: f IS NOT NULL) AS flags
FROM nvtx_raw
WHERE nvtx_is_range(event_type) AND (start IS NULL OR "end" < start OR start < 0 OR "end" < 0);

-- push/pop ranges (straight from the source: cheaper to scan than r0)
CREATE TEMP VIEW push_pop AS
SELECT src_row AS range_id, start AS start_ns, "end" AS end_ns, thread, coalesce(domain_id, 0) AS domain_id, src_pos
FROM nvtx_raw
WHERE nvtx_is_push_pop(event_type) AND start IS NOT NULL AND ("end" IS NULL OR "end" >= start);

-- lanes: the (thread, domain) pairs that hold push/pop ranges, numbered, with their ranges and the last position
-- of one in nvtx_raw (a range without a thread is in no lane: no depth, no parent)
CREATE TEMP TABLE lanes AS
SELECT thread, domain_id, n, last_pos, (row_number() OVER (ORDER BY thread, domain_id))::INTEGER AS lane
FROM (
    SELECT thread, domain_id, count(*) AS n, max(src_pos) AS last_pos
    FROM push_pop
    WHERE thread IS NOT NULL
    GROUP BY ALL
);

-- the sweep's other results (rooflake.ingest.nsys_sweep fills them; in the work database, nsys/work_db.sql)
CREATE TABLE op_inner (uid BIGINT, innermost BIGINT);
-- (the push/pop ranges on some operation's NVTX stack, with their parents and depths: nsys/walk_names.sql names them)
CREATE TABLE walk_ids (id BIGINT, parent_id BIGINT, depth INTEGER);
