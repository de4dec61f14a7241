-- op_roofline: the roofline and time-based roofline of every recorded op of a trace (a torch.profiler trace with
-- record_shapes, or an nsys trace whose NVTX texts carry shapes): work modelled from the recorded shapes (table
-- ops: FLOPs by torch's formulas or rooflake's, each op of a nested chain counted once, in the op that carries it),
-- time measured (the GPU kernels and memops launched under the op; a run without GPU kernels: the op's CPU time).
-- Roofs: the datasheet catalog's dense peaks of the run's GPU (datasheets, matched by runs.gpu_name as
-- rooflake.schema.datasheets.match does); a run without GPU kernels (a CPU trace): the ceilings measured on its
-- host (`rl ceilings measure`, source measured, of one machine key 'host | cpu | N threads': the run's `threads`
-- label picks it where several were measured), their highest value each. The roofs are: DRAM bandwidth and the compute roof of the op's dtype: on a GPU with
-- Tensor Cores (compute capability >= 7.0, not a GTX 16xx) a GEMM, convolution or attention (an op whose FLOPs
-- come from a GEMM formula) in bfloat16 / float16 / float8 is judged against `TENSOR BF16` / `TENSOR FP16` /
-- `TENSOR FP8`, in float64 against `TENSOR FP64` where the GPU has it; float32 against FP32 (PyTorch's matmuls do
-- not use TF32 unless asked); element-wise ops of 16-bit types against FP32 (PyTorch computes them in float).
-- AI = flops / bytes (compulsory bytes: an upper bound of the DRAM AI, the convention TraceLens' "FLOPS/Byte"
-- follows); ai_dram_modelled uses the DeLTA-style DRAM traffic where modelled. attainable = min(P, AI * W_DRAM)
-- (Williams et al. 2009). Time-based (Wang et al., arXiv 2009.04598): T_min = max(F / P, Q / W_DRAM, t_o),
-- inefficiency s = T / T_min, time_bound the largest term. Every number but the times is modelled.
-- Parameters: $run_id, $launch_overhead_ns = 1000.
-- Columns:
--   run_id                  run
--   op_id                   0-based order of the op in the run (ops.op_id)
--   op_name                 operator as recorded (aten::addmm, ...)
--   module_path             nn.Module scopes enclosing the op (ops.module_path)
--   input_dims              the input dims as the trace writes them
--   input_types             the input types as the trace writes them
--   flops                   FLOP, modelled (NULL: no rule, or counted in another op of its chain: flops_source)
--   bytes                   byte, modelled compulsory bytes (every input and the output once)
--   bytes_l2_modelled       byte, modelled L2 traffic (DeLTA-style; NULL: no traffic model)
--   bytes_dram_modelled     byte, modelled DRAM traffic (NULL: no model, or the GPU's L2 size unknown)
--   flops_source            whose rule gave the FLOPs, or why they are NULL
--   kernels                 GPU kernels launched under the op (nested ops included), measured
--   gpu_time_ns             ns, sum of the durations of the kernels, memcpys and memsets launched under the op
--   cpu_time_ns             ns, the op's CPU duration
--   time_ns                 ns, the time judged: gpu_time_ns on a run with GPU kernels, else cpu_time_ns
--   ai                      FLOP/byte = flops / bytes (NULL without both, or for 0 FLOPs)
--   ai_dram_modelled        FLOP/byte = flops / bytes_dram_modelled
--   flops_per_s             FLOP/s = flops / time_ns, achieved
--   attainable_flops_per_s  FLOP/s = min(peak, ai * DRAM bandwidth)
--   peak_flops_per_s        FLOP/s, the compute roof of the op's dtype (NULL: see peak_reason)
--   peak_ceiling            the name of that roof (TENSOR BF16, FP32, ...)
--   bw_dram                 byte/s, the datasheet's DRAM bandwidth
--   bound                   DRAM | the roof's pipe (upper case) | NULL without FLOPs or roofs
--   fraction_of_roof        achieved / attainable
--   t_min_ns                ns, max(F / P, bytes / W_DRAM, t_o) (NULL without FLOPs or roofs)
--   inefficiency            T / T_min (>= 1 unless a model is off)
--   time_bound              compute | DRAM | launch: the largest term of T_min
--   dtype                   the op's first floating-point input dtype
--   datasheet_gpu           the catalog GPU whose roofs are used (NULL: the run's GPU is not in the catalog, or a
--                           run without GPU kernels)
--   roofs_from              datasheet | measured (a CPU trace: `rl ceilings measure` on its host) | NULL: none
--   peak_reason             why peak_flops_per_s is NULL; NULL where the roof is known
WITH run AS (
    SELECT gpu_name, compute_capability, host, labels['threads'] AS threads,
        coalesce(n_kernels, 0) > 0 AS has_gpu,
        CASE WHEN regexp_matches(coalesce(gpu_name, ''), 'GTX 16[0-9][0-9]') THEN false
            ELSE TRY_CAST(compute_capability AS DOUBLE) >= 7.0 END AS tensor_cores
    FROM runs WHERE run_id = $run_id
),
gpu AS (SELECT gpu FROM datasheet_gpu($run_id)),
cpu_keys AS (
    SELECT DISTINCT c.machine_key
    FROM ceilings AS c, run AS r
    WHERE NOT r.has_gpu AND c.source = 'measured' AND starts_with(c.machine_key, r.host || ' | ')
        AND (r.threads IS NULL OR ends_with(c.machine_key, '| ' || r.threads || ' threads'))
),
cpu_key AS (
    SELECT min(machine_key) AS machine_key FROM cpu_keys HAVING count(*) = 1
),
roofs AS (
    SELECT d.quantity AS ceiling, d.value, 'datasheet' AS source
    FROM datasheets AS d JOIN gpu ON d.gpu = gpu.gpu
    WHERE d.unit IN ('FLOP/s', 'byte/s') AND d.value > 0 AND (SELECT has_gpu FROM run)
    UNION ALL
    SELECT c.ceiling, max(c.value), 'measured'
    FROM ceilings AS c JOIN cpu_key AS k ON c.machine_key = k.machine_key
    WHERE c.source = 'measured' AND NOT isnan(c.value) AND c.value > 0
    GROUP BY c.ceiling
),
o AS (
    SELECT
        ops.*,
        CASE WHEN r.has_gpu THEN ops.gpu_time_ns ELSE ops.cpu_time_ns END AS time_ns,
        r.tensor_cores,
        ops.flops_source LIKE 'torch.utils.flop_counter%' OR ops.flops_source LIKE 'rooflake:builtin%' AS gemm_like
    FROM ops, run AS r
    WHERE ops.run_id = $run_id
),
c AS (
    SELECT
        *,
        CASE
            WHEN dtype = 'float64' AND gemm_like AND tensor_cores THEN ['TENSOR FP64', 'FP64']
            WHEN dtype = 'float64' THEN ['FP64']
            WHEN dtype = 'float32' THEN ['FP32']
            WHEN dtype IN ('bfloat16', 'float16') AND gemm_like AND tensor_cores
                THEN ['TENSOR ' || CASE dtype WHEN 'bfloat16' THEN 'BF16' ELSE 'FP16' END]
            WHEN dtype IN ('bfloat16', 'float16') AND gemm_like THEN [CASE dtype WHEN 'bfloat16' THEN 'BF16' ELSE 'FP16' END]
            WHEN dtype IN ('bfloat16', 'float16') THEN ['FP32']
            WHEN starts_with(dtype, 'float8') AND tensor_cores THEN ['TENSOR FP8']
        END AS candidates
    FROM o
),
ranked AS (
    SELECT
        c.op_id,
        r.ceiling,
        r.value,
        row_number() OVER (PARTITION BY c.op_id ORDER BY array_position(c.candidates, r.ceiling)) AS rk
    FROM c
    JOIN roofs AS r ON list_contains(c.candidates, r.ceiling)
),
dram AS (
    SELECT max(value) AS bw_dram FROM roofs WHERE ceiling = 'DRAM'
),
p AS (
    SELECT
        c.*,
        k.value AS peak_flops_per_s,
        k.ceiling AS peak_ceiling,
        d.bw_dram,
        nullif(c.flops, 0) / nullif(c.bytes, 0) AS ai,
        nullif(c.flops, 0) / nullif(c.bytes_dram_modelled, 0) AS ai_dram_modelled,
        c.flops * 1e9 / nullif(c.time_ns, 0) AS flops_per_s
    FROM c
    LEFT JOIN ranked AS k ON k.op_id = c.op_id AND k.rk = 1
    CROSS JOIN dram AS d
),
t AS (
    SELECT
        *,
        attainable(peak_flops_per_s, ai, bw_dram) AS attainable_flops_per_s,
        CASE WHEN flops IS NOT NULL AND peak_flops_per_s IS NOT NULL AND bw_dram IS NOT NULL AND bytes IS NOT NULL
            THEN greatest(flops / peak_flops_per_s * 1e9, bytes / bw_dram * 1e9, $launch_overhead_ns::DOUBLE) END AS t_min_ns
    FROM p
)
SELECT
    run_id, op_id, op_name, module_path, input_dims, input_types, flops, bytes, bytes_l2_modelled,
    bytes_dram_modelled, flops_source, kernels, gpu_time_ns, cpu_time_ns, time_ns, ai, ai_dram_modelled,
    flops_per_s, attainable_flops_per_s, peak_flops_per_s, peak_ceiling, bw_dram,
    roof_bound(attainable_flops_per_s, peak_flops_per_s, peak_ceiling, NULL, ai * bw_dram, flops) AS bound,
    flops_per_s / nullif(attainable_flops_per_s, 0) AS fraction_of_roof,
    t_min_ns,
    time_ns / nullif(t_min_ns, 0) AS inefficiency,
    time_bound(t_min_ns, flops, peak_flops_per_s, bytes, bw_dram) AS time_bound,
    dtype,
    CASE WHEN (SELECT has_gpu FROM run) THEN (SELECT gpu FROM gpu) END AS datasheet_gpu,
    (SELECT min(source) FROM roofs) AS roofs_from,
    CASE
        WHEN peak_flops_per_s IS NOT NULL THEN NULL
        WHEN NOT (SELECT has_gpu FROM run) AND (SELECT count(*) FROM cpu_key) = 0 THEN 'NULL: a run without GPU '
            || 'kernels is judged against the ceilings measured on its host (' || coalesce((SELECT host FROM run), '?')
            || '): none, or several thread counts (label the run -l threads=N); measure them with rl ceilings measure'
        WHEN NOT (SELECT has_gpu FROM run) THEN 'NULL: no measured ' || array_to_string(candidates, ' or ')
            || ' ceiling of this host'
        WHEN (SELECT gpu FROM gpu) IS NULL THEN 'NULL: the run''s GPU (' || coalesce((SELECT gpu_name FROM run), 'unknown')
            || ') is not in the datasheet catalog'
        WHEN dtype IS NULL THEN 'NULL: the op has no floating-point input'
        WHEN candidates IS NULL THEN 'NULL: no compute roof for dtype ' || dtype
        ELSE 'NULL: the datasheet has no ' || array_to_string(candidates, ' or ') || ' ceiling for this GPU'
    END AS peak_reason
FROM t
ORDER BY op_id
