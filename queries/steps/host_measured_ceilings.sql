-- host_measured_ceilings: the measured ceilings (`rl ceilings measure`, source 'measured') of the CPU a run ran on:
-- the machine keys 'host | cpu | N threads' of host $host, only those of $threads threads when it is given (the
-- run's `threads` label). Where a ceiling was measured more than once the highest value is the roof (a peak is the
-- best the machine was measured to do), as range_roofline takes it. The caller checks that one machine key is left.
-- Parameters: $host, $threads.
-- Columns:
--   machine_key          host | cpu | N threads
--   ceiling              FP64, FP32, BF16, L2, DRAM, ... as measured
--   kind                 bandwidth | compute
--   value                byte/s or FLOP/s, the highest measurement
--   value_min            byte/s or FLOP/s, the lowest measurement
--   value_max            byte/s or FLOP/s, the highest measurement
--   unit                 byte/s | FLOP/s
--   formula              how it was measured (the measurement's method)
--   source               measured
--   run_ids              the measurement runs behind the value
--   measured_at          UTC time of the latest measurement
SELECT
    machine_key,
    ceiling,
    min(kind) AS kind,
    max(value) AS value,
    min(value) AS value_min,
    max(value) AS value_max,
    min(unit) AS unit,
    min(formula) AS formula,
    'measured' AS source,
    list(DISTINCT run_id ORDER BY run_id) AS run_ids,
    max(measured_at) AS measured_at
FROM ceilings
WHERE source = 'measured'
    AND NOT isnan(value) AND value > 0
    AND starts_with(machine_key, $host || ' | ')
    AND ($threads::VARCHAR IS NULL OR ends_with(machine_key, '| ' || $threads::VARCHAR || ' threads'))
GROUP BY machine_key, ceiling
ORDER BY machine_key, min(kind), ceiling
