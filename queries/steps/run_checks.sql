-- run_checks: the physics_checks findings of one run ($run_id) or of every run (NULL), in a stable order.
-- Parameters: $run_id.
-- Columns:
--   physics_checks.*     every column of physics_checks, in its order
SELECT *
FROM physics_checks
WHERE $run_id::VARCHAR IS NULL OR run_id = $run_id::VARCHAR
ORDER BY run_id, kernel_id NULLS FIRST, "check"
