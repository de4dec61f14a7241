-- op_roofs: the roofs op_roofline judges a trace run's ops against, as the roofline chart draws them: the dense
-- peaks and the DRAM bandwidth of the run's GPU in the datasheet catalog (datasheets; op_roofline.datasheet_gpu):
-- DRAM and the compute roofs some op is judged against.
-- Parameters: $run_id.
-- Columns:
--   run_id        run
--   machine_key   the catalog GPU
--   ceiling       DRAM, FP64, FP32, TENSOR BF16, ...
--   kind          bandwidth | compute
--   value         byte/s or FLOP/s (dense, at the boost clock)
--   unit          byte/s | FLOP/s
--   clock_hz      Hz, NULL (the datasheet's boost clock is in its formula)
--   source        datasheet
--   source_label  datasheet
--   formula       the datasheet's published value and source
--   overlay       false: the roofs the points are judged against
WITH o AS MATERIALIZED (
    SELECT datasheet_gpu, peak_ceiling FROM op_roofline($run_id)
)
SELECT
    $run_id AS run_id, d.gpu AS machine_key, d.quantity AS ceiling,
    CASE WHEN d.unit = 'byte/s' THEN 'bandwidth' ELSE 'compute' END AS kind,
    d.value, d.unit, NULL::DOUBLE AS clock_hz, 'datasheet' AS source, 'datasheet' AS source_label,
    'datasheet: ' || d.published || ' (' || d.source_url || ')' AS formula, false AS overlay
FROM datasheets AS d
WHERE d.gpu = (SELECT any_value(datasheet_gpu) FROM o)
    AND d.unit IN ('FLOP/s', 'byte/s') AND d.value > 0
    AND (d.quantity = 'DRAM' OR d.quantity IN (SELECT peak_ceiling FROM o))
ORDER BY kind, d.value DESC
