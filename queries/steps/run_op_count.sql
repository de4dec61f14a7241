-- run_op_count: how many recorded ops of a run carry modelled FLOPs (a trace with shapes has some).
-- Parameters: $run_id.
-- Columns:
--   ops_with_flops  ops whose flops are known
SELECT count(flops) AS ops_with_flops FROM ops WHERE run_id = $run_id
