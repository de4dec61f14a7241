-- trajectory_points: the trajectory rows of one sweep as `rl trajectory` draws them: one entity kind ($entity_kind:
-- layer | kernel), the series in $series, runs whose labels hold every $label_keys[i] = $label_values[i], one memory
-- level ($level; NULL: all) and entities whose NVTX path matches the regular expression $layer (NULL: all;
-- '(no NVTX range)' outside every range), ordered for drawing.
-- Parameters: $vary, $depth, $entity_kind, $series, $label_keys, $label_values, $level, $layer.
-- Columns:
--   trajectory.*         every column of trajectory, in its order
SELECT *
FROM trajectory($vary, $depth)
WHERE entity_kind = $entity_kind
    AND list_contains($series::VARCHAR[], series)
    AND has_labels(labels, $label_keys, $label_values)
    AND ($level::VARCHAR IS NULL OR level = $level::VARCHAR)
    AND ($layer::VARCHAR IS NULL OR regexp_matches(coalesce(nvtx_path, '(no NVTX range)'), $layer::VARCHAR))
ORDER BY series, entity_kind, entity, level, step, run_id
