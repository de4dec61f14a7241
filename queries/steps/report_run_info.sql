-- report_run_info: the runs rows of the runs of a report (run_info for several runs in one statement).
-- Parameters: $run_ids.
-- Columns:
--   runs.*               every column of `runs`, in its order
SELECT * FROM runs WHERE list_contains($run_ids::VARCHAR[], run_id) ORDER BY run_id
