-- match_summary: how the launches of an Nsight Systems run matched Nsight Compute kernels, per match kind. Reads
-- `matched`: the rows of nsys_ncu_match for the two runs, given by the caller.
-- Given: matched.
-- Columns:
--   match                path_name_occurrence | name_occurrence | name_mean | unmatched
--   launches             nsys kernel launches
--   kernel_time_ns       ns, their summed duration
--   share_of_launches    launches / all launches of the nsys run
--   share_of_kernel_time kernel_time_ns / the nsys run's kernel time
SELECT
    coalesce(match, 'unmatched') AS match,
    count(*) AS launches,
    sum(duration_ns) AS kernel_time_ns,
    count(*) / sum(count(*)) OVER () AS share_of_launches,
    sum(duration_ns) / sum(sum(duration_ns)) OVER () AS share_of_kernel_time
FROM matched
GROUP BY 1
ORDER BY 1
