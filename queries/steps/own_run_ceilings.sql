-- own_run_ceilings: the run's own report peaks as the roofs of its roofline, in source_run_ceilings' shape: the rows
-- source_run_ceilings gives for $sources = ['ncu-report'], $primary = 'ncu-report' and no machine rows (ncu's
-- peak_sustained x the unit clock, medians over the launches; run_ceilings), read from the store itself rather than
-- from rows the caller gives, so that `rl roofline RUN` on its own peaks needs no Arrow table (nor pyarrow's import). The
-- machine's sources (measured, ert, ert-spec, datasheet) are left out, as there; a run without report peaks has no
-- row with a value > 0, and its roofs come from source_run_ceilings.
-- Parameters: $run_id.
-- Columns:
--   run_id                 VARCHAR   -       run the roofs are drawn for
--   machine_key            VARCHAR   -       gpu|cc|sm clock of the first kernel
--   ceiling                VARCHAR   -       DRAM, L2, L1, FP64, FP32, FP16, TENSOR <SRC>[→<DST>][ <OP>] (as the
--                                            report names it)
--   kind                   VARCHAR   -       bandwidth | compute
--   value                  DOUBLE    <unit>  median over the launches with a valid peak
--   value_min              DOUBLE    <unit>  lowest valid peak of the run's launches
--   value_max              DOUBLE    <unit>  highest
--   clock_hz               DOUBLE    Hz      median profiled clock of the unit the peak holds at
--   unit                   VARCHAR   -       byte/s | FLOP/s (the unit of value, value_min, value_max)
--   formula                VARCHAR   -       metric names used
--   source                 VARCHAR   -       the report's source (ncu-report)
--   n_kernels              BIGINT    -       launches with a valid peak
--   n_invalid              BIGINT    -       launches whose peak is NaN or 0
--   source_label           VARCHAR   -       the source as a legend names it, with the clock in GHz where it is known
--                                            (as source_run_ceilings writes it)
--   overlay                BOOLEAN   -       false: every row is of the source the points are against
SELECT
    run_id, machine_key, ceiling, kind, value, value_min, value_max, clock_hz, unit, formula, source,
    n_kernels, n_invalid,
    CASE WHEN clock_hz > 0 THEN printf('%s, %.2f GHz', source, clock_hz / 1e9) ELSE source END AS source_label,
    false AS overlay
FROM run_ceilings
WHERE run_id = $run_id AND source NOT IN (SELECT source FROM ceiling_sources WHERE machine)
ORDER BY list_position((SELECT list(source ORDER BY precedence) FROM ceiling_sources), source), kind, ceiling
