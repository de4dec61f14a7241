-- run_kernel_count: how many GPU kernel launches one run holds (0: a CPU run, whose layers are timed by their NVTX
-- ranges: range_times).
-- Parameters: $run_id.
-- Columns:
--   kernels              kernel launches of the run
SELECT count(*) AS kernels FROM kernels WHERE run_id = $run_id
