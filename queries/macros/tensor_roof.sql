-- tensor_roof(provenance): the name of a kernel's tensor roof in `ceilings` (e.g. 'TENSOR FP16→FP32'), as ingest
-- chose it and wrote it to kernels.provenance['tensor_roof']: the peak that ncu's
-- SpeedOfLight_HierarchicalTensorRooflineChart pairs with the op path carrying most of the kernel's tensor ops (the
-- one rule: rooflake.ingest.derive, names in rooflake.schema.catalog.TENSOR_PATH_RE). NULL when the kernel has none;
-- the provenance value then says why ('NULL: <reason>').
CREATE MACRO tensor_roof(provenance) AS
CASE WHEN NOT starts_with(coalesce(map_extract_value(provenance, 'tensor_roof'), 'NULL:'), 'NULL:')
    THEN map_extract_value(provenance, 'tensor_roof') END;
