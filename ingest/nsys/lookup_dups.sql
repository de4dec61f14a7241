-- lookup_dups: the ids the export's lookup tables hold more than once (rooflake.ingest.nsys_sqlite.lookups, before
-- the attribution; needs the source views strings and gpus). Every join of a kernel, range or launch call to its
-- text (StringIds) or its GPU (TARGET_INFO_GPU) expects one row per id: a repeated id repeated the joined rows
-- (two kernels stored as four). nsys writes StringIds.id as the table's primary key and one TARGET_INFO_GPU row per
-- device; a file holding an id twice was written by something else.
-- Columns:
--   source_table  VARCHAR  the export's table: StringIds or TARGET_INFO_GPU
--   id            BIGINT   the repeated id (StringIds.id, TARGET_INFO_GPU.id = the device id)
--   n_rows        BIGINT   rows holding it
--   n_values      BIGINT   distinct rows among them (1: exact copies, which the reader keeps once)
SELECT 'StringIds' AS source_table, id, count(*) AS n_rows, count(DISTINCT row(value, value_hex)) AS n_values
FROM strings
GROUP BY id
HAVING count(*) > 1
UNION ALL
SELECT 'TARGET_INFO_GPU', device_id, count(*), count(DISTINCT row(gpu_name, gpu_name_hex, cc_major, cc_minor))
FROM gpus
GROUP BY device_id
HAVING count(*) > 1
ORDER BY n_values DESC, source_table, id
