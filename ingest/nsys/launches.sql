-- launches: the launching API call of every GPU operation (rooflake.ingest.nsys_sqlite; needs api_raw0, api_raw1,
-- then no longer: the reader frees them after this file).
-- Creates: ops, one row per GPU operation (the columns attribution and coverage need; the others stay in the compact
-- Arrow sources until the output) with its launch call; uid: kernels even, memcpy/memset odd. op_flags: the
-- operations whose source rows look wrong (usually none) with their flags. api_names: the launch calls' API names.
-- Columns: none (statements only).

CREATE TEMP VIEW src_api AS
SELECT a.start, a.thread, a.correlation_id, a.api_id, a.api_text
FROM (SELECT * FROM api_raw0 UNION ALL SELECT * FROM api_raw1) AS a
SEMI JOIN op_keys AS k ON k.process_id = process_of(a.thread) AND k.correlation_id = a.correlation_id;

-- the launching API call of each GPU operation (first by time if the export repeats a correlation id: calls counts
-- them), its name as the export holds it: a StringIds id (or inline text), looked up by the kernels' output
-- (nsys/output.sql, in api_names). Strings in the aggregate's hash table cost 0.98 CPU s at 1.6M launch calls,
-- integers 0.59; and the name as text made ops_out, the build side of the kernels' output join, wider.
CREATE TEMP TABLE api1 AS
SELECT process_of(thread) AS process_id, correlation_id, arg_min(thread, start) AS thread, min(start) AS start,
       arg_min(api_id, start) AS api_id, arg_min(api_text, start) AS api_text, count(*) AS calls
FROM src_api
GROUP BY ALL;

-- the names of those calls' APIs (a few: the kernels' output looks them up here, not in all of StringIds)
CREATE TEMP TABLE api_names AS
SELECT s.id, s.value FROM strings AS s SEMI JOIN api1 AS a ON a.api_id = s.id;

-- (in the work database, nsys/work_db.sql: compressed, and dropped from memory without spilling)
CREATE TABLE ops AS
SELECT
    CASE WHEN o.op_kind = 'kernel' THEN 2 * o.idx ELSE 2 * o.idx + 1 END AS uid,
    o.*,
    a.thread AS launch_thread,
    a.start AS launch_start_ns,
    a.api_id AS launch_api_id,
    a.api_text AS launch_api_text,
    a.calls AS launch_calls
FROM (
    SELECT 'kernel' AS op_kind, idx, src_row, start, "end", device_id, correlation_id, process_id, graph_node_id
    FROM src_kernel
    UNION ALL
    SELECT kind, idx, src_row, start, "end", device_id, correlation_id, process_id, graph_node_id FROM src_memop
) AS o
LEFT JOIN api1 AS a USING (process_id, correlation_id);

-- operations whose source rows look wrong, with their flags in a fixed order: no start, no end, end before start, a
-- negative timestamp, a correlation id shared with another operation of the process (not counting operations
-- replayed from a CUDA graph: a graph's nodes carry the correlation id of its launch), several launch calls with its
-- correlation id
CREATE TEMP TABLE op_flags AS
WITH dup AS (
    SELECT process_id, correlation_id FROM ops WHERE graph_node_id IS NULL GROUP BY ALL HAVING count(*) > 1
)
SELECT o.uid, o.op_kind,
       list_filter([
           CASE WHEN o.start IS NULL THEN 'null_start' END,
           CASE WHEN o."end" IS NULL THEN 'null_end' END,
           CASE WHEN o."end" < o.start THEN 'reversed_time' END,
           CASE WHEN o.start < 0 OR o."end" < 0 THEN 'negative_time' END,
           CASE WHEN d.process_id IS NOT NULL THEN 'duplicate_correlation_id' END,
           CASE WHEN o.launch_calls > 1 THEN 'duplicate_launch_call' END
       ], lambda f: f IS NOT NULL) AS flags
FROM ops AS o
LEFT JOIN dup AS d
    ON d.process_id = o.process_id AND d.correlation_id = o.correlation_id AND o.graph_node_id IS NULL
WHERE o.start IS NULL OR o."end" IS NULL OR o."end" < o.start OR o.start < 0 OR o."end" < 0 OR d.process_id IS NOT NULL
    OR o.launch_calls > 1;

DROP TABLE api1;
DROP VIEW op_keys;
DROP VIEW src_api;
DROP VIEW api_raw0;
DROP VIEW api_raw1;
