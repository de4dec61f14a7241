-- launch_overhead_pick: the launch overhead t_o a time-based roofline of each given run uses when none is given:
-- the run's own (launch_overhead, an nsys run with at least $min_pairs back-to-back pairs), else that of the nsys
-- run of the same GPU (runs.gpu_name) with the most such pairs (then the latest ingested, then the run id).
-- Parameters: $run_ids, $min_pairs.
-- Columns:
--   run_id               run
--   launch_overhead_ns   ns, t_o
--   source_run_id        the nsys run it was derived from
--   gpu_name             that run's GPU
WITH me AS (SELECT run_id, gpu_name FROM runs WHERE list_contains($run_ids::VARCHAR[], run_id)),
cand AS (
    SELECT o.run_id, o.launch_overhead_ns, r.gpu_name, o.n_pairs, r.ingested_at
    FROM launch_overhead AS o
    JOIN runs AS r USING (run_id)
    WHERE o.n_pairs >= $min_pairs AND o.launch_overhead_ns > 0
),
ranked AS (
    SELECT
        me.run_id,
        c.launch_overhead_ns,
        c.run_id AS source_run_id,
        c.gpu_name,
        row_number() OVER (
            PARTITION BY me.run_id
            ORDER BY c.run_id <> me.run_id, c.n_pairs DESC, c.ingested_at DESC NULLS LAST, c.run_id
        ) AS rk
    FROM me
    JOIN cand AS c ON c.run_id = me.run_id OR (me.gpu_name IS NOT NULL AND c.gpu_name = me.gpu_name)
)
SELECT run_id, launch_overhead_ns, source_run_id, gpu_name FROM ranked WHERE rk = 1 ORDER BY run_id
