-- sweep_store: store one group's results of the NVTX stack sweep (rooflake.ingest.nsys_sweep registers them:
-- sweep_inner (uid, innermost: the operations launched on the group's threads with a range open), sweep_walk
-- (range_id, depth, parent_id: the ranges on those operations' stacks, their innermost ranges and every ancestor)).
-- Columns: none (statements only).

INSERT INTO op_inner SELECT uid, innermost FROM sweep_inner;

INSERT INTO walk_ids SELECT range_id, parent_id, depth FROM sweep_walk;
