-- sweep_pp: append rows to pp, the stack sweep's depth and parent of every push/pop range by its row's position in
-- nvtx_raw (rooflake.ingest.nsys_sweep registers them as sweep_pp, the next rows in position order; see
-- nsys/ranges.sql). The rows must stay in that order: the ranges output joins pp by position.
-- Columns: none (statements only).

SET preserve_insertion_order = true;

INSERT INTO pp SELECT depth, parent_id FROM sweep_pp;

-- (the reader's setting again: nsys_sqlite.connect)
SET preserve_insertion_order = false;
