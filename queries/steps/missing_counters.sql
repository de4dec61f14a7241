-- missing_counters: why a run has no roofline: the derived quantities (flops_*, bytes_*) that ingest left NULL in
-- some kernel of the run, with the reason it recorded (kernels.provenance values 'NULL: <reason>').
-- Parameters: $run_id, $quantities.
-- Columns:
--   quantity             derived column of `kernels` (flops_fp32, bytes_dram, ...), one of $quantities
--   reason               the provenance text, e.g. 'NULL: none of dram__bytes.sum (or .sum.per_second) in the report'
SELECT DISTINCT e.key AS quantity, e.value AS reason
FROM (SELECT unnest(map_entries(provenance)) AS e FROM kernels WHERE run_id = $run_id)
WHERE e.value LIKE 'NULL:%' AND list_contains($quantities::VARCHAR[], e.key)
ORDER BY 1, 2
