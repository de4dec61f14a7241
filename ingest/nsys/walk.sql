-- walk: the ranges on some operation's NVTX stack, first step (rooflake.ingest.nsys_sqlite: then
-- nsys/walk_step.sql until it finds no new range, then nsys/walk_names.sql).
-- Creates: text_names (text, name: one row per distinct range text), ranges_named (view: every range with its text
-- and grouping name, the output included); walk_ids (id, parent_id, depth: the ranges found so far, first every
-- operation's innermost one), walk_up (id: their parents not yet in walk_ids, the next step's frontier).
-- Columns: none (statements only).

-- text_names: the grouping name of every distinct NVTX text, computed once per text (a PyTorch trace repeats a few
-- thousand texts over millions of ranges: at 5.7M ranges, 0.4 CPU s instead of 1.0 for the names where used)
CREATE TEMP TABLE text_names AS
SELECT text, range_name(text, pytorch_cut(text)) AS name
FROM (
    SELECT DISTINCT coalesce(n.text_inline, s.value) AS text
    FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id
    WHERE nvtx_is_range(n.event_type)
)
WHERE text IS NOT NULL;

CREATE TEMP VIEW ranges_named AS
SELECT r.*, t.name
FROM (
    SELECT r0.*, coalesce(r0.text_inline, s.value) AS text, coalesce(r0.text_inline_hex, s.value_hex) AS text_hex
    FROM r0 LEFT JOIN strings AS s ON s.id = r0.text_id
) AS r
LEFT JOIN text_names AS t ON t.text = r.text;

-- the stack of names of every range that is some operation's innermost one, then one path_id per distinct
-- (domain, stack). First the ids on those stacks (walking up the parent ids one level per nsys/walk_step.sql: a
-- recursive CTE keeps its UNION's hash table and its joins in memory, out of memory at 1.2M operations under a
-- 300 MB limit; these joins spill), then the names of those ranges only (the names of all 700k ranges of a large
-- export at once: +130 MB), then the walk again, carrying the names (nsys/stacks.sql)
CREATE TEMP TABLE walk_ids AS
SELECT p.range_id AS id, p.parent_id, p.depth FROM pp AS p SEMI JOIN op_inner AS o ON o.innermost = p.range_id;

CREATE TEMP TABLE walk_up AS
SELECT DISTINCT parent_id AS id FROM walk_ids WHERE parent_id IS NOT NULL
EXCEPT
SELECT id FROM walk_ids;
