-- unmatched_nsys: kernels of the Nsight Systems run that the Nsight Compute run never profiled (no twin, no name).
-- Reads `matched`: the rows of nsys_ncu_match, given by the caller.
-- Given: matched.
-- Columns:
--   name                 demangled kernel name
--   launches             its nsys launches
--   kernel_time_ns       ns, their summed duration
SELECT name, count(*) AS launches, sum(duration_ns) AS kernel_time_ns
FROM matched
WHERE match IS NULL
GROUP BY name
ORDER BY kernel_time_ns DESC
