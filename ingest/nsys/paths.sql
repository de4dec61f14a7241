-- paths: the NVTX path of every path node of nsys/stacks.sql (rooflake.ingest.nsys_sqlite, after the last
-- nsys/stack_level.sql; the reader purges DuckDB's allocator after this file).
-- Creates: paths (path_id -> domain_id, nvtx_stack (range names, outermost first), nvtx_domain, nvtx_path
-- (<domain>:<name>/<name>/...): one row per distinct NVTX stack); drops walk and the per-depth tables.
-- Columns: none (statements only).

CREATE TEMP TABLE paths AS
WITH RECURSIVE s(pid, domain_id, stack) AS (
    SELECT pid, domain_id, [name] FROM path_nodes WHERE parent_pid IS NULL
    UNION ALL
    SELECT c.pid, c.domain_id, list_append(s.stack, c.name) FROM s JOIN path_nodes AS c ON c.parent_pid = s.pid
)
SELECT s.pid AS path_id, s.domain_id, s.stack AS nvtx_stack, d.domain AS nvtx_domain,
       d.domain || ':' || array_to_string(s.stack, '/') AS nvtx_path
FROM s
LEFT JOIN domain_names AS d USING (domain_id);

DROP TABLE walk;
DROP TABLE path_nodes;
DROP TABLE level_prev;
DROP TABLE IF EXISTS level_cur;
DROP TABLE IF EXISTS level_nodes;
