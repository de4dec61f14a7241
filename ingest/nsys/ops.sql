-- ops: GPU operations in start order, and the (process, correlation id) keys of their launch calls
-- (rooflake.ingest.nsys_sqlite; needs k_raw, mc_raw, ms_raw).
-- Creates: src_kernel, src_memop (views: idx = kernel_id / op_id, row number in start order), op_keys (view).
-- Columns: none (statements only).

CREATE TEMP VIEW src_kernel AS
SELECT row_number() OVER (ORDER BY k.start, k.correlation_id, k.process_id, k.device_id) - 1 AS idx, k.*
FROM k_raw AS k;

CREATE TEMP VIEW src_memop AS
SELECT row_number() OVER (ORDER BY start, kind, correlation_id, process_id, device_id) - 1 AS idx, *
FROM (SELECT 'memcpy' AS kind, * FROM mc_raw UNION ALL SELECT 'memset' AS kind, * FROM ms_raw);

-- the (process, correlation id) of every GPU operation: the API calls that launched one are the only ones kept (an
-- export can hold 10x more API calls than GPU operations: aggregating all of them cost +400 MB at 1.7M calls). A
-- view, keys repeated where operations share one: the semi join that reads it needs no DISTINCT (which cost
-- ~0.35 CPU s at 1.6M operations)
CREATE TEMP VIEW op_keys AS
SELECT process_id, correlation_id
FROM (
    SELECT process_id, correlation_id FROM k_raw
    UNION ALL SELECT process_id, correlation_id FROM mc_raw
    UNION ALL SELECT process_id, correlation_id FROM ms_raw
);
