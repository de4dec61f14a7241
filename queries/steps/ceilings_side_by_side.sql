-- ceilings_side_by_side: the ceilings of one machine with one column per source and the ratios between them
-- (machine_ceilings pivoted; the caller provides its rows as `machine_ceiling_rows`). Tensor-Core roofs pair by
-- source type: the datasheet's dense `TENSOR FP16` with the fastest dense path of the report whose source is FP16
-- (`TENSOR FP16 HGMMA`, `TENSOR FP16→FP32`; 2:4-sparse peaks are left out). Report peaks hold at the clock ncu
-- profiled at (ncu locks the GPU to its base clock by default), datasheet peaks at the boost clock: for a compute
-- ceiling, report / datasheet should equal report clock / datasheet clock (report_per_clock_over_datasheet = 1)
-- when both count the same units at the same clock domain. Each source's values go to the column the ceiling_sources
-- registry names for it (side_by_side: report, datasheet, ert, measured; a source without one is left out).
-- Given: machine_ceiling_rows.
-- Columns:
--   ceiling                              DRAM, L2, L1, FP64, FP32, TENSOR <SRC>, ...
--   kind                                 bandwidth | compute
--   unit                                 byte/s | FLOP/s | op/s
--   report_ceiling                       the report's ceiling behind `report` (its fastest dense path for tensors)
--   report                               value of the ncu report (ncu-report), unit above
--   report_clock_hz                      Hz, the clock the report peak holds at
--   datasheet                            the datasheet's dense peak, unit above
--   datasheet_clock_hz                   Hz, the boost clock (compute); NULL for bandwidth
--   ert                                  ERT empirical value, unit above
--   measured                             measured value (rl ceilings measure), unit above
--   report_over_datasheet                report / datasheet
--   clock_ratio                          report_clock_hz / datasheet_clock_hz: what the clocks predict for it
--   report_per_clock_over_datasheet      report_over_datasheet / clock_ratio (1 = same rate per clock)
--   ert_over_datasheet                   ert / datasheet
--   measured_over_datasheet              measured / datasheet
--   ert_over_report                      ert / report
--   measured_over_report                 measured / report
WITH keyed AS (
    SELECT
        m.*,
        s.side_by_side AS side_column,
        CASE WHEN m.ceiling LIKE 'TENSOR %'
            THEN 'TENSOR ' || split_part(split_part(m.ceiling[8:], ' ', 1), '→', 1) ELSE m.ceiling END AS pair
    FROM machine_ceiling_rows AS m
    LEFT JOIN ceiling_sources AS s ON s.source = m.source
    WHERE m.ceiling NOT LIKE 'TENSOR % SPARSE'
),
w AS (
    SELECT
        pair AS ceiling,
        min(kind) AS kind,
        min(unit) AS unit,
        arg_max(ceiling, value) FILTER (WHERE side_column = 'report') AS report_ceiling,
        max(value) FILTER (WHERE side_column = 'report') AS report,
        arg_max(clock_hz, value) FILTER (WHERE side_column = 'report') AS report_clock_hz,
        max(value) FILTER (WHERE side_column = 'datasheet') AS datasheet,
        max(clock_hz) FILTER (WHERE side_column = 'datasheet') AS datasheet_clock_hz,
        max(value) FILTER (WHERE side_column = 'ert') AS ert,
        max(value) FILTER (WHERE side_column = 'measured') AS measured
    FROM keyed
    GROUP BY pair
)
SELECT
    *,
    report / datasheet AS report_over_datasheet,
    report_clock_hz / datasheet_clock_hz AS clock_ratio,
    (report / datasheet) / (report_clock_hz / datasheet_clock_hz) AS report_per_clock_over_datasheet,
    ert / datasheet AS ert_over_datasheet,
    measured / datasheet AS measured_over_datasheet,
    ert / report AS ert_over_report,
    measured / report AS measured_over_report
FROM w
ORDER BY kind, ceiling
