-- ranges: NVTX ranges, their domains, and the setup of the NVTX stack sweep (rooflake.ingest.nsys_sqlite; needs
-- nvtx_raw, strings).
-- Creates: domain_names, r0 (view: one row per range), range_flags (the ranges whose source rows look wrong, with
-- their flags), push_pop (view), lanes (the lanes of the stack sweep), op_inner, pp and walk_ids (its results,
-- empty: rooflake.ingest.nsys_sweep fills them, with the method).
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

-- ranges: range_id = the event's rowid (a view: read from the Arrow source where used; text as in the source)
CREATE TEMP VIEW r0 AS
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
    n.text_id
FROM nvtx_raw AS n
WHERE nvtx_is_range(n.event_type);

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
SELECT src_row AS range_id, start AS start_ns, "end" AS end_ns, thread, coalesce(domain_id, 0) AS domain_id
FROM nvtx_raw
WHERE nvtx_is_push_pop(event_type) AND start IS NOT NULL AND ("end" IS NULL OR "end" >= start);

-- lanes: the (thread, domain) pairs that hold push/pop ranges, numbered, with their ranges (a range without a
-- thread is in no lane: no depth, no parent)
CREATE TEMP TABLE lanes AS
SELECT thread, domain_id, n, (row_number() OVER (ORDER BY thread, domain_id))::INTEGER AS lane
FROM (SELECT thread, domain_id, count(*) AS n FROM push_pop WHERE thread IS NOT NULL GROUP BY ALL);

-- the sweep's results (rooflake.ingest.nsys_sweep fills them; in the work database, nsys/work_db.sql: pp holds every
-- push/pop range)
CREATE TABLE op_inner (uid BIGINT, innermost BIGINT);
CREATE TABLE pp (range_id BIGINT, depth INTEGER, parent_id BIGINT);
-- (the push/pop ranges on some operation's NVTX stack, as pp: nsys/walk_names.sql names them)
CREATE TABLE walk_ids (id BIGINT, parent_id BIGINT, depth INTEGER);
