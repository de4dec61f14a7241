-- output: the reader's output tables as views over the attribution and the sources, named as the store's columns
-- (rooflake.schema.tables: KERNELS, MEMOPS, RANGES, COVERAGE); rooflake.ingest.nsys_sqlite conforms each to its
-- schema (conform.sql: run_id added, every column cast, absent ones NULL); DuckDB streams it as Arrow batches to
-- pyarrow's Parquet writer (rooflake.schema.duck.DuckTable).
-- Rows come in no particular order: sorting whole rows with their names cost 280 MB at 150k kernels, and a sort of
-- integers with the strings joined after it keeps its order only while DuckDB probes with the sorted side (not when
-- an export has more strings than kernels).
-- Columns: those of the store's tables, in rooflake.schema.tables (units in the names: *_ns ns, *_bytes byte).

-- kernels: one row per CUPTI_ACTIVITY_KIND_KERNEL row (filtered on the narrow side, ops_out: DuckDB builds its hash
-- table there, one row per kernel; what it holds for the few kernels that have them, the start/end ranges and the
-- flags, is joined from op_se and op_flags, and the launch call's API name by its id, after that join)
CREATE TEMP VIEW kernels_out AS
SELECT
    a.idx AS kernel_id,
    coalesce(x.name_text, s_name.value) AS name,
    coalesce(x.short_name_text, s_short.value) AS short_name,
    coalesce(x.mangled_name_text, s_mangled.value) AS mangled_name,
    x.device_id, x.context_id, x.stream_id, x.correlation_id, x.graph_id, x.graph_node_id,
    a.launch_thread, a.launch_start_ns, coalesce(a.launch_api_text, s_api.value) AS launch_api,
    a.attribution, se.names AS nvtx_start_end,
    x.grid_x, x.grid_y, x.grid_z, x.block_x, x.block_y, x.block_z,
    x.grid_x * x.grid_y * x.grid_z AS grid_size,
    x.block_x * x.block_y * x.block_z AS block_size,
    x.registers AS registers_per_thread,
    x.smem_static AS shared_mem_static_bytes,
    x.smem_dynamic AS shared_mem_dynamic_bytes,
    g.gpu_name,
    CASE WHEN g.cc_major IS NOT NULL THEN g.cc_major::VARCHAR || '.' || g.cc_minor::VARCHAR END AS compute_capability,
    p.nvtx_path, p.nvtx_stack, p.nvtx_domain,
    x.start AS start_ns,
    x."end" AS end_ns,
    x."end"::HUGEINT - x.start AS duration_ns,  -- stored as DOUBLE: exact below 2^53 ns, no overflow at all
    x.process_id,
    MAP {'*': 'NULL: no counters in Nsight Systems'} AS provenance,
    coalesce(f.flags, []::VARCHAR[]) AS flags,
    CASE
        WHEN coalesce(x.name_text_hex, s_name.value_hex, x.short_name_text_hex, s_short.value_hex,
                      x.mangled_name_text_hex, s_mangled.value_hex) IS NOT NULL
        THEN map_from_entries(list_filter([
            {'key': 'name', 'value': coalesce(x.name_text_hex, s_name.value_hex)},
            {'key': 'short_name', 'value': coalesce(x.short_name_text_hex, s_short.value_hex)},
            {'key': 'mangled_name', 'value': coalesce(x.mangled_name_text_hex, s_mangled.value_hex)}
        ], lambda e: e.value IS NOT NULL))
    END AS invalid_utf8_hex
FROM k_raw AS x
JOIN ops_out AS a ON a.src_row = x.src_row
LEFT JOIN strings AS s_name ON s_name.id = x.name_id
LEFT JOIN strings AS s_short ON s_short.id = x.short_name_id
LEFT JOIN strings AS s_mangled ON s_mangled.id = x.mangled_name_id
LEFT JOIN api_names AS s_api ON s_api.id = a.launch_api_id
LEFT JOIN gpus AS g ON g.device_id = x.device_id
LEFT JOIN paths AS p ON p.path_id = a.path_id
LEFT JOIN op_se AS se ON se.uid = a.uid
LEFT JOIN op_flags AS f ON f.uid = a.uid
WHERE a.op_kind = 'kernel';

-- memops: one row per CUPTI_ACTIVITY_KIND_MEMCPY and _MEMSET row
CREATE TEMP VIEW memops_out AS
SELECT
    a.idx AS op_id,
    x.kind, x.copy_kind, x.bytes, x.device_id, x.context_id, x.stream_id, x.correlation_id,
    a.launch_thread, a.launch_start_ns, a.attribution,
    x.start AS start_ns,
    x."end" AS end_ns,
    TRY_CAST(x."end"::HUGEINT - x.start AS BIGINT) AS duration_ns,  -- NULL past the BIGINT range
    x.process_id,
    p.nvtx_path, p.nvtx_stack, p.nvtx_domain,
    coalesce(f.flags, []::VARCHAR[]) AS flags
FROM (SELECT 'memcpy' AS kind, * FROM mc_raw UNION ALL SELECT 'memset' AS kind, * FROM ms_raw) AS x
JOIN ops_out AS a ON a.src_row = x.src_row AND a.op_kind = x.kind
LEFT JOIN paths AS p ON p.path_id = a.path_id
LEFT JOIN op_flags AS f ON f.uid = a.uid
WHERE a.op_kind <> 'kernel';

-- ranges: one row per NVTX range or mark, its depth and parent from the stack sweep (pp, joined by position:
-- nvtx_swept). The reader writes it with DuckDB's build_side_probe_side optimizer off: every hash join builds on its
-- right side, as written (DuckDB takes the positional join's rows for 0: it built on the 5.7M ranges with their text
-- and ran out of memory)
CREATE TEMP VIEW ranges_out AS
SELECT
    d.domain, r.name, r.text, r.range_id, r.kind, r.start_ns, r.end_ns, r.process_id, r.thread, r.end_thread,
    r.depth, r.parent_id,
    CASE WHEN r.range_id IS NOT NULL THEN coalesce(f.flags, []::VARCHAR[]) END AS flags,  -- NULL without an id
    CASE
        WHEN r.text_hex IS NOT NULL OR d.domain_hex IS NOT NULL
        THEN map_from_entries(list_filter([
            {'key': 'text', 'value': r.text_hex}, {'key': 'domain', 'value': d.domain_hex}
        ], lambda e: e.value IS NOT NULL))
    END AS invalid_utf8_hex
FROM named_ranges('nvtx_swept') AS r
LEFT JOIN domain_names AS d ON d.domain_id = r.domain_id
LEFT JOIN range_flags AS f ON f.range_id = r.range_id;

-- coverage: per device, kind of operation and attribution, the operations and their GPU time (ns)
CREATE TEMP TABLE coverage_out AS
SELECT device_id, op_kind, attribution, count(*) AS ops, TRY_CAST(sum("end"::HUGEINT - start) AS BIGINT) AS gpu_time_ns,
       count(graph_node_id) AS graph_ops
FROM ops_out
GROUP BY ALL;

-- (attribution_kind's values are in alphabetical order: the rows come in the order of the texts)
CREATE TEMP VIEW coverage_sorted AS
SELECT * FROM coverage_out ORDER BY device_id, op_kind, attribution;
