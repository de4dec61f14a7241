-- walk_names: the name of every range on some operation's NVTX stack (rooflake.ingest.nsys_sqlite, after
-- nsys/range_names.sql; the stack sweep found those ranges, walk_ids: rooflake.ingest.nsys_sweep; the reader purges
-- DuckDB's allocator after this file: ~65 MB at 700k ranges).
-- Creates: walk (id, parent_id, depth, domain_id, name of every range on a stack); drops walk_ids.
-- Columns: none (statements only).

-- (text and name as in ranges_named, but joined on nvtx_raw: through the view DuckDB names all 700k ranges before
-- the join, 0.11 s against 0.05 s)
CREATE TEMP TABLE walk AS
SELECT w.id, w.parent_id, w.depth, w.domain_id, t.name
FROM (
    SELECT w.id, w.parent_id, w.depth, coalesce(n.domain_id, 0) AS domain_id, coalesce(n.text_inline, s.value) AS text
    FROM nvtx_raw AS n JOIN walk_ids AS w ON w.id = n.src_row LEFT JOIN strings AS s ON s.id = n.text_id
) AS w
LEFT JOIN text_names AS t ON t.text = w.text;

DROP TABLE walk_ids;
