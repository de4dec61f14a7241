-- top_kernels: the kernels (by demangled name) of one run that take the most kernel time.
-- Parameters: $run_id, $top.
-- Columns:
--   name                 demangled kernel name
--   launches             its launches
--   kernel_time_ns       ns, summed duration (NaN durations left out)
--   share_of_kernel_time kernel_time_ns / the run's kernel time
SELECT
    name,
    count(*) AS launches,
    sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns)) AS kernel_time_ns,
    sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))
        / sum(sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))) OVER () AS share_of_kernel_time
FROM kernels
WHERE run_id = $run_id
GROUP BY name
ORDER BY kernel_time_ns DESC NULLS LAST
LIMIT $top
