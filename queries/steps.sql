-- steps: the roofline and time-based roofline of each LLM serving engine step of a trace (table serving_steps:
-- vLLM's execute_context_... ranges, SGLang's step[...] and ATOM's prefill[...]/decode[...], with the batch makeup
-- their names carry; rooflake.ingest.steps). A step's work is the sum of the modelled work of the ops (each op of
-- a chain counted once, in its carrier: op_roofline) that started on the step's thread while the step was open,
-- CUDA-graph replayed ops included (rl ingest --capture); its time the GPU kernels launched on its thread while it
-- was open (replayed kernels under their graph launch), measured. Roofs: op_roofline's (the datasheet catalog's for
-- the run's GPU): DRAM bandwidth and the compute roof of the dtype carrying most of the step's FLOPs. AI = flops /
-- bytes (compulsory bytes: an upper bound of the DRAM AI); attainable = min(P, AI * W_DRAM) (Williams et al. 2009);
-- T_min = max(F / P, Q / W_DRAM, n * t_o) with n the kernels (Wang et al., arXiv 2009.04598). A step of an unknown
-- format keeps its time; its counts are NULL.
-- Parameters: $run_id, $launch_overhead_ns = 1000.
-- Columns:
--   run_id                  VARCHAR   -         run
--   step_id                 BIGINT    -         0-based order of the step in the run
--   name                    VARCHAR   -         the step range's name
--   format                  VARCHAR   -         vllm | vllm-roofline | sglang | sglang-roofline | atom | atom-roofline | unknown
--   phase                   VARCHAR   -         prefill | decode | mixed (NULL: the name does not say)
--   prefill_requests        BIGINT    -         context (prefill) requests
--   prefill_tokens          BIGINT    token     their query tokens
--   decode_requests         BIGINT    -         generation (decode) requests
--   decode_tokens           BIGINT    token     their query tokens
--   context_tokens          BIGINT    token     KV tokens attended to (sum of N_KV)
--   sum_q_sq                BIGINT    token^2   sum of N_Q^2
--   sum_q_kv                BIGINT    token^2   sum of N_Q * N_KV
--   start_ns                BIGINT    ns        the step range's start
--   end_ns                  BIGINT    ns        the step range's end
--   duration_ns             BIGINT    ns        end - start (CPU, measured)
--   kernels                 BIGINT    -         GPU kernels launched under the step
--   gpu_time_ns             DOUBLE    ns        sum of their durations, measured (NULL: none launched)
--   ops                     BIGINT    -         ops under the step carrying FLOPs
--   ops_without_flops       BIGINT    -         ops under the step with no FLOP rule (flops_source 'none: ...')
--   replayed_ops            BIGINT    -         of the ops, replayed from CUDA graphs
--   flops                   DOUBLE    FLOP      sum of the ops' modelled FLOPs (NULL: no op with FLOPs)
--   bytes                   DOUBLE    byte      sum of their modelled compulsory bytes
--   ai                      DOUBLE    FLOP/byte flops / bytes
--   flops_per_s             DOUBLE    FLOP/s    flops / gpu_time, achieved
--   peak_flops_per_s        DOUBLE    FLOP/s    the compute roof of the dtype carrying most FLOPs (NULL: no roof)
--   peak_ceiling            VARCHAR   -         that roof's name
--   bw_dram                 DOUBLE    byte/s    the datasheet's DRAM bandwidth
--   attainable_flops_per_s  DOUBLE    FLOP/s    min(peak, ai * bw_dram)
--   bound                   VARCHAR   -         DRAM | the roof's name | NULL without FLOPs or roofs
--   t_min_ns                DOUBLE    ns        max(F / P, Q / W_DRAM, kernels * t_o)
--   inefficiency            DOUBLE    -         gpu_time / t_min
--   time_bound              VARCHAR   -         compute | DRAM | launch: the largest term of t_min
WITH s AS (
    SELECT * FROM serving_steps WHERE run_id = $run_id
),
o AS (
    SELECT r.*, k.thread, k.start_ns AS op_start_ns, k.graph_launch
    FROM op_roofline($run_id, $launch_overhead_ns) AS r
    JOIN ops AS k ON k.run_id = r.run_id AND k.op_id = r.op_id
    WHERE k.run_id = $run_id
),
work AS (
    SELECT
        s.step_id,
        count(o.flops) AS ops,
        count(*) FILTER (WHERE starts_with(o.flops_source, 'none:')) AS ops_without_flops,
        count(*) FILTER (WHERE o.graph_launch IS NOT NULL AND o.flops IS NOT NULL) AS replayed_ops,
        sum(o.flops) AS flops,
        sum(o.bytes) FILTER (WHERE o.flops IS NOT NULL)::DOUBLE AS bytes,
        arg_max(o.peak_flops_per_s, coalesce(o.flops, 0)) FILTER (WHERE o.flops IS NOT NULL) AS peak_flops_per_s,
        arg_max(o.peak_ceiling, coalesce(o.flops, 0)) FILTER (WHERE o.flops IS NOT NULL) AS peak_ceiling,
        max(o.bw_dram) AS bw_dram
    FROM s
    JOIN o ON o.thread = s.thread AND o.op_start_ns >= s.start_ns AND o.op_start_ns < s.end_ns
    GROUP BY s.step_id
),
gpu AS (
    SELECT s.step_id, count(*) AS kernels, sum(k.duration_ns) AS gpu_time_ns
    FROM s
    JOIN kernels AS k ON k.run_id = $run_id AND k.launch_thread = s.thread
        AND k.launch_start_ns >= s.start_ns AND k.launch_start_ns < s.end_ns
    GROUP BY s.step_id
),
p AS (
    SELECT
        s.*, coalesce(g.kernels, 0) AS kernels, g.gpu_time_ns,
        coalesce(w.ops, 0) AS ops, coalesce(w.ops_without_flops, 0) AS ops_without_flops,
        coalesce(w.replayed_ops, 0) AS replayed_ops, w.flops, w.bytes,
        nullif(w.flops, 0) / nullif(w.bytes, 0) AS ai,
        w.flops * 1e9 / nullif(g.gpu_time_ns, 0) AS flops_per_s,
        w.peak_flops_per_s, w.peak_ceiling, w.bw_dram
    FROM s
    LEFT JOIN work AS w USING (step_id)
    LEFT JOIN gpu AS g USING (step_id)
),
t AS (
    SELECT
        *,
        attainable(peak_flops_per_s, ai, bw_dram) AS attainable_flops_per_s,
        CASE WHEN flops IS NOT NULL AND peak_flops_per_s IS NOT NULL AND bw_dram IS NOT NULL AND bytes IS NOT NULL
            THEN greatest(flops / peak_flops_per_s * 1e9, bytes / bw_dram * 1e9,
                greatest(kernels, 1) * $launch_overhead_ns::DOUBLE) END AS t_min_ns
    FROM p
)
SELECT
    run_id, step_id, name, format, phase, prefill_requests, prefill_tokens, decode_requests, decode_tokens,
    context_tokens, sum_q_sq, sum_q_kv, start_ns, end_ns, end_ns - start_ns AS duration_ns, kernels,
    gpu_time_ns::DOUBLE AS gpu_time_ns, ops, ops_without_flops, replayed_ops, flops::DOUBLE AS flops, bytes, ai,
    flops_per_s, peak_flops_per_s, peak_ceiling, bw_dram, attainable_flops_per_s,
    roof_bound(attainable_flops_per_s, peak_flops_per_s, peak_ceiling, NULL, ai * bw_dram, flops) AS bound,
    t_min_ns,
    gpu_time_ns / nullif(t_min_ns, 0) AS inefficiency,
    time_bound(t_min_ns, flops, peak_flops_per_s, bytes, bw_dram) AS time_bound
FROM t
ORDER BY step_id
