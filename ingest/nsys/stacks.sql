-- stacks: the NVTX stack (range names, outermost first) above every range that is some operation's innermost one
-- (rooflake.ingest.nsys_sqlite; the reader purges DuckDB's allocator after this file).
-- Creates: leaf_stack (leaf, domain_id, stack).
-- Columns: none (statements only).

CREATE TEMP TABLE leaf_stack AS
WITH RECURSIVE up(leaf, domain_id, cur, stack) AS (
    SELECT w.id, w.domain_id, w.parent_id, [w.name] FROM walk AS w WHERE w.id IN (SELECT innermost FROM op_inner)
    UNION ALL
    SELECT u.leaf, u.domain_id, p.parent_id, list_prepend(p.name, u.stack) FROM up AS u JOIN walk AS p ON p.id = u.cur
)
SELECT leaf, domain_id, stack FROM up WHERE cur IS NULL;

DROP TABLE walk;
