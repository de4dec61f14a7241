-- sweep_ranges: the push/pop ranges of a group of lanes of the NVTX stack sweep (rooflake.ingest.nsys_sweep; needs
-- push_pop and lanes, nsys/ranges.sql).
-- Parameters: $lo, $hi: the group's first and last lane.
-- Columns: (rows in no particular order: nsys_sweep puts them lane by lane in push order itself, with a stable sort
-- of keys that an export holds nearly in order already; DuckDB's ORDER BY cost 0.75 s per 2.8M-range lane, numpy
-- takes 0.1 s)
--   lane       the range's lane (lanes.lane)
--   range_id   the range (its event's rowid)
--   start_ns   ns   its push
--   end_ns     ns   its pop; 0 where it is never popped (open)
--   open       1 where it is never popped (no end in the source), else 0 (an integer: numpy takes it without a
--              copy through Arrow's memory pool)
--   src_pos    its row's position in nvtx_raw (where the sweep puts its depth and parent in pp)
SELECT l.lane, r.range_id, r.start_ns, coalesce(r.end_ns, 0) AS end_ns, (r.end_ns IS NULL)::UTINYINT AS open, r.src_pos
FROM push_pop AS r
JOIN lanes AS l USING (thread, domain_id)
WHERE l.lane BETWEEN $lo AND $hi;
