-- run_ceilings: the machine ceilings of each run, long: one row per run x ceiling (run_roofs is the same pivoted
-- wide). ncu reports a peak per kernel launch (peak_sustained x that launch's clock); this takes the median over the
-- run's launches, with min and max beside it so clock drift is visible. NaN or zero peaks
-- (a failed replay) are left out of the median and counted.
-- Columns:
--   run_id                 VARCHAR   -       run
--   machine_key            VARCHAR   -       gpu|cc|sm clock of the first kernel
--   ceiling                VARCHAR   -       DRAM, L2, L1, FP64, FP32, FP16, TENSOR <SRC>[→<DST>][ <OP>][ SPARSE]
--                                            (e.g. TENSOR FP16→FP32: one per Tensor-Core op path, named by its source
--                                            type; catalog.TensorPath)
--   kind                   VARCHAR   -       bandwidth | compute
--   value                  DOUBLE    <unit>  median over kernels with a valid peak
--   value_min              DOUBLE    <unit>  lowest valid peak of the run's launches
--   value_max              DOUBLE    <unit>  highest
--   clock_hz               DOUBLE    Hz      median clock of the unit the peak holds at
--   unit                   VARCHAR   -       byte/s | FLOP/s (the unit of value, value_min, value_max)
--   formula                VARCHAR   -       metric names used
--   source                 VARCHAR   -       ncu-report | ...
--   n_kernels              BIGINT    -       launches with a valid peak
--   n_invalid              BIGINT    -       launches whose peak is NaN or 0
SELECT
    run_id,
    min(machine_key) AS machine_key,
    ceiling,
    min(kind) AS kind,
    median(value) FILTER (WHERE NOT isnan(value) AND value > 0) AS value,
    min(value) FILTER (WHERE NOT isnan(value) AND value > 0) AS value_min,
    max(value) FILTER (WHERE NOT isnan(value) AND value > 0) AS value_max,
    median(clock_hz) FILTER (WHERE NOT isnan(value) AND value > 0) AS clock_hz,
    min(unit) AS unit,
    min(formula) AS formula,
    min(source) AS source,
    count(*) FILTER (WHERE NOT isnan(value) AND value > 0) AS n_kernels,
    count(*) FILTER (WHERE isnan(value) OR value <= 0) AS n_invalid
FROM ceilings
GROUP BY run_id, ceiling
ORDER BY run_id, min(kind), ceiling
