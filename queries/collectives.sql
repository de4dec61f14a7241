-- collectives: the collective kernels of one run (one rank of a job: is_collective), grouped by NVTX layer, kind and
-- message: launches, GPU time, the message bytes torch's record_param_comms op recorded around the launch (its
-- `In msg nelems`, `Out msg nelems`, `dtype`, `Group size` args; the innermost such op open on the launching
-- thread at the launch), and the bus bandwidth NCCL's own tests report: algbw = bytes / time, busbw = algbw x
-- 2(n-1)/n for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all, x 1 otherwise (n = group
-- size), against the roof of one NVLink direction (half the datasheet's NVLINK number, both directions together).
-- Parameters: $run_id.
-- Columns:
--   run_id            VARCHAR  -        run
--   layer             VARCHAR  -        the kernel's outermost NVTX range (nvtx_stack[1]), NULL at top level
--   collective        VARCHAR  -        allreduce | allgather | reduce_scatter | alltoall | broadcast | reduce |
--                                       sendrecv | other: the op's `Collective name`, else the kernel's name
--   kernel            VARCHAR  -        the kernel's short name
--   launches          BIGINT   -        kernel launches
--   time_ns           BIGINT   ns       GPU time, sum of the kernels' durations
--   dtype             VARCHAR  -        the op's `dtype` (NULL: no record_param_comms op with it)
--   group_size        BIGINT   -        ranks in the process group (`Group size`)
--   bytes             BIGINT   byte     message bytes per launch: max(In, Out msg nelems) x the dtype's size
--                                       (NULL: the trace records no message size or an unknown dtype)
--   algbw_bytes_per_s DOUBLE   byte/s   launches x bytes / time
--   busbw_bytes_per_s DOUBLE   byte/s   algbw x the collective's factor (NCCL tests' busbw)
--   roof_bytes_per_s  DOUBLE   byte/s   one direction of NVLink (datasheet NVLINK / 2); NULL: see roof_reason
--   fraction_of_roof  DOUBLE   -        busbw / roof
--   roof_reason       VARCHAR  -        why roof_bytes_per_s or bytes is NULL; NULL where both are known
WITH run AS (
    SELECT gpu_name, compute_capability FROM runs WHERE run_id = $run_id
),
gpu AS (SELECT gpu FROM datasheet_gpu($run_id)),
roof AS (
    SELECT (SELECT gpu FROM gpu) AS gpu,
        (SELECT d.value / 2 FROM datasheets AS d JOIN gpu ON d.gpu = gpu.gpu WHERE d.quantity = 'NVLINK') AS link
),
coll AS (
    SELECT kernel_id, short_name, name, nvtx_stack[1] AS layer, duration_ns, launch_thread, launch_start_ns
    FROM kernels WHERE run_id = $run_id AND is_collective(name)
),
comms AS (
    SELECT thread, start_ns, end_ns, args FROM ranges
    WHERE run_id = $run_id AND name = 'record_param_comms' AND start_ns IS NOT NULL AND end_ns IS NOT NULL
),
placed AS (
    SELECT c.*, arg_max(m.args, m.start_ns) AS args
    FROM coll AS c
    LEFT JOIN comms AS m
        ON m.thread = c.launch_thread AND c.launch_start_ns >= m.start_ns AND c.launch_start_ns < m.end_ns
    GROUP BY ALL
),
argd AS (
    SELECT *,
        json_extract_string(args, '$."Collective name"') AS coll_name,
        json_extract_string(args, '$.dtype') AS dtype,
        TRY_CAST(json_extract_string(args, '$."Group size"') AS BIGINT) AS group_size,
        greatest(TRY_CAST(json_extract_string(args, '$."In msg nelems"') AS BIGINT),
                 TRY_CAST(json_extract_string(args, '$."Out msg nelems"') AS BIGINT)) AS nelems
    FROM placed
),
typed AS (
    SELECT *,
        CASE lower(replace(coalesce(dtype, ''), 'c10::', ''))
            WHEN 'double' THEN 8 WHEN 'long' THEN 8 WHEN 'complexfloat' THEN 8
            WHEN 'float' THEN 4 WHEN 'int' THEN 4
            WHEN 'bfloat16' THEN 2 WHEN 'half' THEN 2 WHEN 'short' THEN 2
            WHEN 'byte' THEN 1 WHEN 'char' THEN 1 WHEN 'bool' THEN 1
            WHEN 'float8_e4m3fn' THEN 1 WHEN 'float8_e5m2' THEN 1
        END AS elem_bytes,
        CASE
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'allreduce') THEN 'allreduce'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'allgather') THEN 'allgather'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'reducescatter')
                THEN 'reduce_scatter'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'alltoall') THEN 'alltoall'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'broadcast') THEN 'broadcast'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'sendrecv|send|recv')
                THEN 'sendrecv'
            WHEN regexp_matches(lower(replace(coalesce(coll_name, name), '_', '')), 'reduce') THEN 'reduce'
            ELSE 'other'
        END AS collective
    FROM argd
),
g AS (
    SELECT
        layer, collective, coalesce(short_name, name) AS kernel, dtype, group_size,
        nelems * elem_bytes AS bytes,
        count(*)::BIGINT AS launches,
        round(sum(duration_ns))::BIGINT AS time_ns
    FROM typed
    GROUP BY ALL
),
bw AS (
    SELECT *,
        launches * bytes * 1e9 / nullif(time_ns, 0) AS algbw,
        CASE
            WHEN collective = 'allreduce' THEN 2.0 * (group_size - 1) / group_size
            WHEN collective IN ('allgather', 'reduce_scatter', 'alltoall') THEN 1.0 * (group_size - 1) / group_size
            ELSE 1.0
        END AS factor
    FROM g
)
SELECT
    $run_id AS run_id, layer, collective, kernel, launches, time_ns, dtype, group_size, bytes,
    algbw AS algbw_bytes_per_s,
    algbw * factor AS busbw_bytes_per_s,
    (SELECT link FROM roof) AS roof_bytes_per_s,
    algbw * factor / nullif((SELECT link FROM roof), 0) AS fraction_of_roof,
    CASE
        WHEN bytes IS NULL THEN 'the trace records no message size for these launches (record_param_comms with '
            || '`In msg nelems` and a known `dtype`: torch >= 2.1 profiling with record_shapes)'
        WHEN (SELECT gpu FROM roof) IS NULL THEN 'the run''s GPU is not in the datasheet catalog'
        WHEN (SELECT link FROM roof) IS NULL THEN 'no sourced NVLink number for ' || (SELECT gpu FROM roof)
            || ' in the datasheet catalog (a network roof between nodes is never sourced there)'
    END AS roof_reason
FROM bw
ORDER BY time_ns DESC, layer, kernel
