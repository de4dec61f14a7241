-- source_run_ceilings: the ceilings a roofline of run $run_id is drawn against, from the sources chosen
-- (--ceilings), in run_ceilings' shape plus the legend's source text: the run's own report peaks (run_ceilings rows,
-- the caller gives them as `run_ceiling_rows`: ncu's peak_sustained x the unit clock, medians over the launches; the
-- token 'ncu-report' in $sources and $primary stands for them, whatever their source) and
-- the machine's other sources (machine_ceilings rows, `machine_ceiling_rows`: datasheet dense peaks at the boost
-- clock, ERT empirical, measured: the machine sources of the ceiling_sources registry). Latency rows (the measured
-- launch overhead) are no roofs and are left out.
-- Given: run_ceiling_rows, machine_ceiling_rows.
-- Parameters: $run_id, $machine, $sources, $primary.
-- Columns:
--   run_id                 VARCHAR   -       run the roofs are drawn for
--   machine_key            VARCHAR   -       report rows: gpu|cc|sm clock of the first kernel; other sources: the
--                                            machine ($machine: the datasheet's GPU or the run's gpu_name)
--   ceiling                VARCHAR   -       DRAM, L2, L1, FP64, FP32, FP16, TENSOR <SRC>[→<DST>][ <OP>] (as the
--                                            source names it)
--   kind                   VARCHAR   -       bandwidth | compute
--   value                  DOUBLE    <unit>  the source's median
--   value_min              DOUBLE    <unit>  lowest row of the source (launches, runs)
--   value_max              DOUBLE    <unit>  highest
--   clock_hz               DOUBLE    Hz      the clock the value holds at (report: profiled unit clock; datasheet:
--                                            boost; NULL where the source does not say)
--   unit                   VARCHAR   -       byte/s | FLOP/s | op/s (the unit of value, value_min, value_max)
--   formula                VARCHAR   -       how the source got the value (metric names, ERT units, datasheet text)
--   source                 VARCHAR   -       ceilings.source, one of the ceiling_sources registry's (ncu-report,
--                                            measured, ...)
--   n_kernels              BIGINT    -       report: launches with a valid peak; other sources: rows behind the value
--   n_invalid              BIGINT    -       report: launches whose peak is NaN or 0; other sources: 0
--   source_label           VARCHAR   -       the source as a legend names it: 'ncu-report', 'datasheet, boost clock',
--                                            'ert', 'measured' (with the clock in GHz where it is known)
--   overlay                BOOLEAN   -       false for the rows of $primary (the source the points are against), true
--                                            for the other sources drawn beside it (--ceilings all)
WITH report AS (
    SELECT
        run_id, machine_key, ceiling, kind, value, value_min, value_max, clock_hz, unit, formula, source,
        n_kernels, n_invalid
    FROM run_ceiling_rows
    WHERE run_id = $run_id AND source NOT IN (SELECT source FROM ceiling_sources WHERE machine)
        AND list_contains($sources, 'ncu-report')
),
other AS (
    SELECT
        $run_id::VARCHAR AS run_id,
        $machine::VARCHAR AS machine_key,
        ceiling, kind, value, value_min, value_max, clock_hz, unit, formula, source,
        n_rows AS n_kernels,
        0::BIGINT AS n_invalid
    FROM machine_ceiling_rows
    WHERE source IN (SELECT source FROM ceiling_sources WHERE machine) AND list_contains($sources, source)
        AND kind IN ('bandwidth', 'compute')
),
rows AS (
    SELECT *, true AS is_report FROM report
    UNION ALL
    SELECT *, false FROM other
)
SELECT
    * EXCLUDE (is_report),
    CASE
        WHEN source = 'datasheet' AND clock_hz > 0
            THEN printf('datasheet, boost clock %.2f GHz', clock_hz / 1e9)
        WHEN is_report AND clock_hz > 0 THEN printf('%s, %.2f GHz', source, clock_hz / 1e9)
        ELSE source
    END AS source_label,
    CASE WHEN is_report THEN $primary <> 'ncu-report' ELSE source <> $primary END AS overlay
FROM rows
ORDER BY overlay, list_position((SELECT list(source ORDER BY precedence) FROM ceiling_sources), source), kind, ceiling
