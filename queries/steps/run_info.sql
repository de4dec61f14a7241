-- run_info: the runs row of one run (what a view prints about the run: source, GPU, labels).
-- Parameters: $run_id.
-- Columns:
--   runs.*               every column of `runs`, in its order
SELECT * FROM runs WHERE run_id = $run_id
