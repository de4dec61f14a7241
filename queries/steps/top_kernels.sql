-- top_kernels: per run of $run_ids, the $top kernels (by demangled name) that take the most kernel time (ties: by
-- name), one statement for every run of a report.
-- Parameters: $run_ids, $top.
-- Columns:
--   run_id               run
--   name                 demangled kernel name
--   launches             its launches
--   kernel_time_ns       ns, summed duration (NaN durations left out)
--   share_of_kernel_time kernel_time_ns / the run's kernel time
WITH per_name AS (
    SELECT
        run_id,
        name,
        count(*) AS launches,
        sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns)) AS kernel_time_ns
    FROM kernels
    WHERE list_contains($run_ids::VARCHAR[], run_id)
    GROUP BY run_id, name
),
ranked AS (
    SELECT
        *,
        -- fsum: the correctly rounded sum, whatever order the rows come in (sum() differs in the last bit)
        kernel_time_ns / fsum(kernel_time_ns) OVER (PARTITION BY run_id) AS share_of_kernel_time,
        row_number() OVER (PARTITION BY run_id ORDER BY kernel_time_ns DESC NULLS LAST, name) AS rank
    FROM per_name
)
SELECT run_id, name, launches, kernel_time_ns, share_of_kernel_time
FROM ranked
WHERE rank <= $top
ORDER BY run_id, rank
