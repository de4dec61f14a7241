-- unmatched_ncu: kernels the Nsight Compute run profiled that no launch of the Nsight Systems run took as its twin.
-- Reads `matched`: the rows of nsys_ncu_match, given by the caller.
-- Given: matched.
-- Parameters: $ncu_run.
-- Columns:
--   kernel_id            kernel in the ncu run
--   name                 demangled kernel name
--   nvtx_path            its NVTX path (NULL outside every range)
SELECT kernel_id, name, nvtx_path
FROM kernels
WHERE run_id = $ncu_run
    AND kernel_id NOT IN (SELECT ncu_kernel_id FROM matched WHERE ncu_kernel_id IS NOT NULL)
ORDER BY kernel_id
