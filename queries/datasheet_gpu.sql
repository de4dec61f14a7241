-- datasheet_gpu: the GPU of run $run_id in the datasheet catalog (rooflake.schema.datasheets): the first
-- `datasheet_gpus` entry whose `match` pattern matches the whole of the run's gpu_name as datasheet_name() writes
-- it, at the run's compute capability where the run records one. One row; gpu NULL when the catalog has no entry
-- (or the run no GPU name). The one rule by which op_roofline and collectives take a run's datasheet roofs.
-- Parameters: $run_id.
-- Columns:
--   gpu  VARCHAR  -  the catalog's GPU name (datasheets.gpu); NULL: not in the catalog
SELECT min(dg.gpu) AS gpu
FROM datasheet_gpus AS dg, runs AS dr  -- (aliases no caller's query uses: a macro's $run_id may name its own)
WHERE dr.run_id = $run_id
    AND regexp_matches(datasheet_name(dr.gpu_name), '^(?:' || dg.match || ')$')
    AND (dr.compute_capability IS NULL OR dg.compute_capability = dr.compute_capability)
