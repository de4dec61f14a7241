-- walk_step: one level up the NVTX stacks from the frontier (rooflake.ingest.nsys_sqlite runs it after
-- nsys/walk.sql until it returns 0): the frontier's ranges join walk_ids, their parents not yet there are the next
-- frontier.
-- Columns:
--   n   ranges in the next frontier (0: every range on some operation's stack is in walk_ids)

CREATE OR REPLACE TEMP TABLE walk_new AS
SELECT p.range_id AS id, p.parent_id, p.depth FROM pp AS p SEMI JOIN walk_up AS u ON u.id = p.range_id;

INSERT INTO walk_ids SELECT id, parent_id, depth FROM walk_new;

CREATE OR REPLACE TEMP TABLE walk_up AS
SELECT DISTINCT parent_id AS id FROM walk_new WHERE parent_id IS NOT NULL
EXCEPT
SELECT id FROM walk_ids;

SELECT count(*) AS n FROM walk_up;
