-- walk: the ranges on some operation's NVTX stack, with their names (rooflake.ingest.nsys_sqlite; the reader purges
-- DuckDB's allocator after this file: ~65 MB at 700k ranges).
-- Creates: ranges_named (view: every range with its text and grouping name, computed where used, the output
-- included), walk (id, parent_id, domain_id, name of every range on a stack).
-- Columns: none (statements only).

CREATE TEMP VIEW ranges_named AS
SELECT *, range_name(text, cut) AS name
FROM (
    SELECT *, pytorch_cut(text) AS cut
    FROM (
        SELECT r0.*, coalesce(r0.text_inline, s.value) AS text, coalesce(r0.text_inline_hex, s.value_hex) AS text_hex
        FROM r0 LEFT JOIN strings AS s ON s.id = r0.text_id
    )
);

-- the stack of names of every range that is some operation's innermost one, then one path_id per distinct
-- (domain, stack). First the ids on those stacks (walking up the parent ids), then the names of those ranges only
-- (the names of all 700k ranges of a large export at once: +130 MB), then the walk again, carrying the names
CREATE TEMP TABLE walk_ids AS
WITH RECURSIVE up(id, cur) AS (
    SELECT range_id, parent_id FROM pp WHERE range_id IN (SELECT innermost FROM op_inner)
    UNION
    SELECT p.range_id, p.parent_id FROM up AS u JOIN pp AS p ON p.range_id = u.cur
)
SELECT id, cur AS parent_id FROM up;

-- (text and name as in ranges_named, but joined on nvtx_raw: through the view DuckDB names all 700k ranges before
-- the join, 0.11 s against 0.05 s)
CREATE TEMP TABLE walk AS
SELECT id, parent_id, domain_id, range_name(text, cut) AS name
FROM (
    SELECT *, pytorch_cut(text) AS cut
    FROM (
        SELECT w.id, w.parent_id, coalesce(n.domain_id, 0) AS domain_id, coalesce(n.text_inline, s.value) AS text
        FROM nvtx_raw AS n JOIN walk_ids AS w ON w.id = n.src_row LEFT JOIN strings AS s ON s.id = n.text_id
    )
);

DROP TABLE walk_ids;
