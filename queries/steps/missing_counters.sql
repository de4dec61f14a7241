-- missing_counters: why each run of $run_ids has no roofline: the derived quantities (flops_*, bytes_*) that ingest
-- left NULL in some kernel of the run, with the reason it recorded (kernels.provenance values 'NULL: <reason>'); one
-- statement for every run a report draws no roofline of.
-- Parameters: $run_ids, $quantities.
-- Columns:
--   run_id               run
--   quantity             derived column of `kernels` (flops_fp32, bytes_dram, ...), one of $quantities
--   reason               the provenance text, e.g. 'NULL: none of dram__bytes.sum (or .sum.per_second) in the report'
SELECT DISTINCT run_id, e.key AS quantity, e.value AS reason
FROM (
    SELECT run_id, unnest(map_entries(provenance)) AS e
    FROM kernels
    WHERE list_contains($run_ids::VARCHAR[], run_id)
)
WHERE e.value LIKE 'NULL:%' AND list_contains($quantities::VARCHAR[], e.key)
ORDER BY 1, 2, 3
