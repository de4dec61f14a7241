-- walk: the ranges on some operation's NVTX stack, first step (rooflake.ingest.nsys_sqlite: then
-- nsys/walk_step.sql until it finds no new range, then nsys/walk_names.sql).
-- Creates: ranges_named (view: every range with its text and grouping name, computed where used, the output
-- included); walk_ids (id, parent_id: the ranges found so far, first every operation's innermost one), walk_up (id:
-- their parents not yet in walk_ids, the next step's frontier).
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
-- (domain, stack). First the ids on those stacks (walking up the parent ids one level per nsys/walk_step.sql: a
-- recursive CTE keeps its UNION's hash table and its joins in memory, out of memory at 1.2M operations under a
-- 300 MB limit; these joins spill), then the names of those ranges only (the names of all 700k ranges of a large
-- export at once: +130 MB), then the walk again, carrying the names (nsys/stacks.sql)
CREATE TEMP TABLE walk_ids AS
SELECT p.range_id AS id, p.parent_id FROM pp AS p SEMI JOIN op_inner AS o ON o.innermost = p.range_id;

CREATE TEMP TABLE walk_up AS
SELECT DISTINCT parent_id AS id FROM walk_ids WHERE parent_id IS NOT NULL
EXCEPT
SELECT id FROM walk_ids;
