-- summary: the counts and the GPU of an Nsight Systems export once attributed (rooflake.ingest.nsys_sqlite: the
-- ingest summary and the runs row).
-- Columns:
--   n_kernels    kernel rows
--   n_memops     memcpy and memset rows
--   n_ranges     NVTX ranges and marks
--   n_coverage   rows of coverage_out
--   gpu_name     name of the export's first GPU (TARGET_INFO_GPU, lowest id); NULL without that table
--   cc_major     its compute capability, major
--   cc_minor     its compute capability, minor
SELECT
    (SELECT count(*) FROM ops_out WHERE op_kind = 'kernel') AS n_kernels,
    (SELECT count(*) FROM ops_out WHERE op_kind <> 'kernel') AS n_memops,
    (SELECT count(*) FROM r0) AS n_ranges,
    (SELECT count(*) FROM coverage_out) AS n_coverage,
    g.gpu_name,
    g.cc_major,
    g.cc_minor
FROM (SELECT 1 AS one) AS x
LEFT JOIN (SELECT gpu_name, cc_major, cc_minor FROM gpus ORDER BY device_id LIMIT 1) AS g ON true;
