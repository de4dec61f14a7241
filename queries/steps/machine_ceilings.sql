-- machine_ceilings: every ceiling known for one machine, one row per source x ceiling: the report peaks of the run
-- asked about (ncu peak_sustained x the unit clock the run was profiled at; with no run, of every run of the GPU),
-- the ERT results and measured ceilings of the runs named or labelled for the machine (gpu_name, labels machine
-- or gpu), and the datasheet's dense peaks at the boost clock (the catalog rows, read from `datasheet_ceilings`,
-- which the caller provides: rooflake.schema.datasheets.ceilings()). NaN or zero values are left out. Sources are
-- listed in the precedence of the ceiling_sources registry.
-- $runs: the runs named or labelled for the machine (step machine_runs, the run asked about among them), a
-- constant list, so that a store read query by query binds the files of these runs only, not every run's ceilings.
-- Given: datasheet_ceilings.
-- Parameters: $run_id, $runs, $datasheet_gpu.
-- Columns:
--   source               ceilings.source, one of the ceiling_sources registry's (ncu-report, measured, ...)
--   ceiling              DRAM, L2, L1, L3, FP64, FP32, FP16, TENSOR_<SRC>, ... (the source's name where rooflake has none)
--   kind                 bandwidth | compute
--   value                byte/s, FLOP/s or op/s: median over the source's rows (kernel launches, runs)
--   value_min            same unit, lowest row
--   value_max            same unit, highest row
--   unit                 byte/s | FLOP/s | op/s
--   clock_hz             Hz, median clock the value holds at (report: the profiled unit clock; datasheet: boost)
--   n_rows               rows behind the value (launches of a report, runs, 1 for the datasheet)
--   run_ids              runs the rows come from (empty for the datasheet)
--   formula              how the source got the value (metric names, ERT units, datasheet text)
--   source_name          the ceiling's name in its source (ERT label, datasheet text); NULL for ncu
--   measured_at          UTC time of the latest measurement (ERT, measured); NULL otherwise
WITH store_rows AS (
    SELECT c.source, c.ceiling, c.kind, c.value, c.unit, c.clock_hz, c.run_id, c.formula, c.source_name,
        c.measured_at
    FROM ceilings AS c
    WHERE list_contains($runs, c.run_id)
        AND NOT isnan(c.value) AND c.value > 0
        AND (c.source IS DISTINCT FROM 'ncu-report' OR $run_id IS NULL OR c.run_id = $run_id)
),
sheet_rows AS (
    SELECT source, ceiling, kind, value, unit, clock_hz, NULL::VARCHAR AS run_id, formula, source_name,
        NULL::TIMESTAMPTZ AS measured_at
    FROM datasheet_ceilings
    WHERE gpu = $datasheet_gpu
),
all_rows AS (
    SELECT * FROM store_rows
    UNION ALL
    SELECT * FROM sheet_rows
)
SELECT
    source,
    ceiling,
    min(kind) AS kind,
    median(value) AS value,
    min(value) AS value_min,
    max(value) AS value_max,
    min(unit) AS unit,
    median(clock_hz) AS clock_hz,
    count(*) AS n_rows,
    coalesce(list(DISTINCT run_id ORDER BY run_id) FILTER (WHERE run_id IS NOT NULL), []) AS run_ids,
    min(formula) AS formula,
    min(source_name) AS source_name,
    max(measured_at) AS measured_at
FROM all_rows
GROUP BY source, ceiling
ORDER BY
    list_position((SELECT list(source ORDER BY precedence) FROM ceiling_sources), source) NULLS LAST, source,
    min(kind), ceiling
