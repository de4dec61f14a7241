-- stack_level: the path nodes of one depth of the NVTX stacks (rooflake.ingest.nsys_sqlite runs it for $depth = 0, 1,
-- ... up to nsys/stacks.sql's max_depth, in order). A range at depth d > 0 has its parent at depth d - 1 (the sweep
-- finds a parent one level up: rooflake.ingest.nsys_sweep), whose path the previous run gave (level_prev).
-- Parameters: $depth (the depth of the ranges placed, 0 = outermost).
-- Columns: none (statements only).

CREATE OR REPLACE TEMP TABLE level_cur AS
SELECT w.id, p.pid AS parent_pid, w.domain_id, w.name
FROM (SELECT * FROM walk WHERE depth = $depth) AS w
LEFT JOIN level_prev AS p ON p.id = w.parent_id;

-- the new nodes: one per distinct (parent path, domain, name) at this depth, numbered after the nodes so far
CREATE OR REPLACE TEMP TABLE level_nodes AS
SELECT (SELECT count(*) FROM path_nodes) + row_number() OVER () AS pid, parent_pid, domain_id, name
FROM (SELECT DISTINCT parent_pid, domain_id, name FROM level_cur);

INSERT INTO path_nodes SELECT pid, parent_pid, domain_id, name FROM level_nodes;

CREATE OR REPLACE TEMP TABLE level_prev AS
SELECT c.id, n.pid
FROM level_cur AS c
JOIN level_nodes AS n
    ON n.parent_pid IS NOT DISTINCT FROM c.parent_pid AND n.domain_id IS NOT DISTINCT FROM c.domain_id
    AND n.name IS NOT DISTINCT FROM c.name;

INSERT INTO range_pid SELECT id, pid FROM level_prev;
