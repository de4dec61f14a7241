-- stacks: the NVTX stacks as a tree of distinct paths, first step (rooflake.ingest.nsys_sqlite: then
-- nsys/stack_level.sql once per depth, 0 first, then nsys/paths.sql). Each distinct (parent path, domain, range name)
-- is one path node, so a stack's names are kept once per distinct stack, not once per range (a list of names per
-- range that is some operation's innermost one cost ~1.9 CPU s and the reader's peak memory at 1.2M kernels).
-- Creates: path_nodes (pid, parent_pid, domain_id, name: one row per distinct path; parent_pid NULL at depth 0),
-- range_pid (id, pid: the path of every range in walk; filled one depth at a time), level_prev (the last depth's).
-- Columns:
--   max_depth   the deepest range in walk (NULL when walk is empty: no operation has a push/pop range open)

CREATE TEMP TABLE path_nodes (pid BIGINT, parent_pid BIGINT, domain_id BIGINT, name VARCHAR);
CREATE TEMP TABLE range_pid (id BIGINT, pid BIGINT);
CREATE OR REPLACE TEMP TABLE level_prev (id BIGINT, pid BIGINT);

SELECT max(depth) AS max_depth FROM walk;
