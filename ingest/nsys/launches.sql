-- launches: the launching API call of every GPU operation (rooflake.ingest.nsys_sqlite; needs api_raw0, api_raw1,
-- then no longer: the reader frees them after this file).
-- Creates: ops, one row per GPU operation (the columns attribution and coverage need; the others stay in the compact
-- Arrow sources until the output) with its launch call; uid: kernels even, memcpy/memset odd.
-- Columns: none (statements only).

CREATE TEMP VIEW src_api AS
SELECT a.start, a."end", a.thread, a.correlation_id, coalesce(a.api_text, s.value) AS api
FROM (SELECT * FROM api_raw0 UNION ALL SELECT * FROM api_raw1) AS a
SEMI JOIN op_keys AS k ON k.process_id = process_of(a.thread) AND k.correlation_id = a.correlation_id
LEFT JOIN strings AS s ON s.id = a.api_id;

-- the launching API call of each GPU operation (first by time if the export repeats a correlation id)
CREATE TEMP TABLE api1 AS
SELECT process_of(thread) AS process_id, correlation_id, arg_min(thread, start) AS thread,
       min(start) AS start, arg_min(api, start) AS api
FROM src_api
GROUP BY ALL;

CREATE TEMP TABLE ops AS
SELECT
    CASE WHEN o.op_kind = 'kernel' THEN 2 * o.idx ELSE 2 * o.idx + 1 END AS uid,
    o.*,
    a.thread AS launch_thread,
    a.start AS launch_start_ns,
    a.api AS launch_api
FROM (
    SELECT 'kernel' AS op_kind, idx, src_row, start, "end", device_id, correlation_id, process_id, graph_node_id
    FROM src_kernel
    UNION ALL
    SELECT kind, idx, src_row, start, "end", device_id, correlation_id, process_id, NULL FROM src_memop
) AS o
LEFT JOIN api1 AS a USING (process_id, correlation_id);

DROP TABLE api1;
DROP TABLE op_keys;
DROP VIEW src_api;
DROP VIEW api_raw0;
DROP VIEW api_raw1;
