-- The shared rules of the roofline queries, one place each (Williams et al. 2009; Yang et al., "Hierarchical
-- Roofline analysis for GPUs", 2020; ncu SpeedOfLight_Hierarchical*RooflineChart). kernel_roofline,
-- layer_roofline, trajectory and layer_summary call these instead of repeating them.

-- precisions(): the FLOP precisions, in the order that breaks ties (precision, ord).
CREATE MACRO precisions() AS TABLE
SELECT * FROM (VALUES ('fp64', 1), ('fp32', 2), ('fp16', 3), ('tensor', 4)) AS p (precision, ord);

-- by_precision(prec, fp64, fp32, fp16, tensor): the value that belongs to precision `prec` (fp64 | fp32 | fp16 |
-- tensor), e.g. the FLOP count or the peak of that pipe.
CREATE MACRO by_precision(prec, fp64, fp32, fp16, tensor) AS
CASE prec WHEN 'fp64' THEN fp64 WHEN 'fp32' THEN fp32 WHEN 'fp16' THEN fp16 ELSE tensor END;

-- flops_total(fp64, fp32, fp16, tensor): FLOP over the precisions counted; NULL when none is (a report without
-- the counters has no FLOP count, which is not 0 FLOPs).
CREATE MACRO flops_total(fp64, fp32, fp16, tensor) AS
CASE WHEN coalesce(fp64, fp32, fp16, tensor) IS NOT NULL
    THEN coalesce(fp64, 0) + coalesce(fp32, 0) + coalesce(fp16, 0) + coalesce(tensor, 0) END;

-- counted_flops(x): a FLOP count to rank precisions by: -1 for NULL or NaN (no count).
CREATE MACRO counted_flops(x) AS CASE WHEN x IS NULL OR isnan(x) THEN -1 ELSE x END;

-- flops_gap(ratio): the likely cause of a gap over 10 % between a layer's counted FLOPs (ncu) and its algorithmic
-- FLOPs (from the model, or from a trace's recorded shapes), ratio = counted / algorithmic; NULL within 10 %.
CREATE MACRO flops_gap(ratio) AS
CASE
    WHEN ratio > 1.1 THEN 'FLOPs: executed > algorithmic (padding, tiles computed past the edge, recomputation, or '
        || 'a counting convention: ncu counts FP16 lanes and tensor ops as issued)'
    WHEN ratio < 0.9 THEN 'FLOPs: executed < algorithmic (Winograd/FFT convolution, or ops no counter sees: '
        || 'tensor ops without the tensor section, SFU, integer)'
END;

-- dominant_precision(fp64, fp32, fp16, tensor): the precision with the most FLOPs (NULL and NaN count as none: a
-- failed replay's NaN is above every number to DuckDB; ties: fp64, fp32, fp16, tensor); NULL where no precision has
-- FLOPs (a copy, an int8 GEMM: no precision to name).
CREATE MACRO dominant_precision(fp64, fp32, fp16, tensor) AS
CASE
    WHEN greatest(counted_flops(fp64), counted_flops(fp32), counted_flops(fp16), counted_flops(tensor)) <= 0
        THEN NULL
    WHEN counted_flops(fp64) >= greatest(counted_flops(fp32), counted_flops(fp16), counted_flops(tensor)) THEN 'fp64'
    WHEN counted_flops(fp32) >= greatest(counted_flops(fp16), counted_flops(tensor)) THEN 'fp32'
    WHEN counted_flops(fp16) >= counted_flops(tensor) THEN 'fp16'
    ELSE 'tensor'
END;

-- no_flops_reason(flops, counted, uncounted): why a kernel (or its launches summed) has no precision or AI:
-- NULL where `flops` > 0 or `counted` is NULL (not in the run); 'failed replay (NaN values)'; 'no FLOP counters'
-- (no precision counted: not `counted`); '0 FLOPs where counted, no counter for <uncounted>' (an int8 GEMM whose
-- Tensor-Core counts the report lacks: not a zero-FLOP kernel for sure); 'no FLOPs at any precision' (a copy).
CREATE MACRO no_flops_reason(flops, counted, uncounted) AS
CASE
    WHEN counted IS NULL THEN NULL
    WHEN isnan(flops) THEN 'failed replay (NaN values)'
    WHEN flops > 0 THEN NULL
    WHEN NOT counted OR flops IS NULL THEN 'no FLOP counters'
    WHEN len(uncounted) > 0 THEN '0 FLOPs where counted, no counter for ' || array_to_string(uncounted, ', ')
    ELSE 'no FLOPs at any precision'
END;

-- attainable(peak, ai, bw): the roof at arithmetic intensity `ai` (FLOP/byte) of a memory level with bandwidth
-- `bw` (byte/s) under a pipe of peak `peak` (FLOP/s): min(P, AI_l * W_l) in FLOP/s; NULL unless all three are known.
CREATE MACRO attainable(peak, ai, bw) AS
CASE WHEN ai IS NOT NULL AND bw IS NOT NULL AND peak IS NOT NULL THEN least(peak, ai * bw) END;

-- roof_bound(attainable, peak, prec, attainable_l2, attainable_dram, flops): what bounds a point whose
-- attainable FLOP/s is the lowest of its levels' (`attainable`): the pipe (upper(prec)) when that is the peak,
-- else the level whose roof it is (DRAM, then L2, then L1 on ties); NULL without a roof or without FLOPs, and for
-- a NaN (a failed replay: DuckDB orders NaN above every number, so it would be the pipe's).
CREATE MACRO roof_bound(attainable, peak, prec, attainable_l2, attainable_dram, flops) AS
CASE
    WHEN attainable IS NULL OR flops = 0 OR isnan(attainable) OR isnan(flops) THEN NULL
    WHEN attainable >= peak THEN upper(prec)
    WHEN attainable = attainable_dram THEN 'DRAM'
    WHEN attainable = attainable_l2 THEN 'L2'
    ELSE 'L1'
END;

-- above_roof(achieved, attainable): achieved FLOP/s exceeds the attainable by more than 0.1 % (a physics violation:
-- flag it, never correct it). DuckDB orders NaN above every number: a NaN achieved is tested first.
CREATE MACRO above_roof(achieved, attainable) AS
coalesce(NOT isnan(achieved) AND achieved > attainable * 1.001, false);

-- levels_without_roof(bytes_l1, bw_l1, bytes_l2, bw_l2, bytes_dram, bw_dram): the levels with bytes but no roof
-- (the bound cannot account for them), as a list of 'L1' | 'L2' | 'DRAM'.
CREATE MACRO levels_without_roof(bytes_l1, bw_l1, bytes_l2, bw_l2, bytes_dram, bw_dram) AS
list_filter(
    [CASE WHEN bytes_l1 IS NOT NULL AND bw_l1 IS NULL THEN 'L1' END,
     CASE WHEN bytes_l2 IS NOT NULL AND bw_l2 IS NULL THEN 'L2' END,
     CASE WHEN bytes_dram IS NOT NULL AND bw_dram IS NULL THEN 'DRAM' END],
    lambda x: x IS NOT NULL
);

-- time_bound(t_min, flops, peak, bytes, bw): the largest term of a time-based roofline's T_min = max(F / P, Q / W,
-- t_o) in ns (Wang et al., arXiv 2009.04598): 'compute', 'DRAM' or 'launch'; NULL without T_min.
CREATE MACRO time_bound(t_min, flops, peak, bytes, bw) AS
CASE
    WHEN t_min IS NULL THEN NULL
    WHEN t_min = flops / peak * 1e9 THEN 'compute'
    WHEN t_min = bytes / bw * 1e9 THEN 'DRAM'
    ELSE 'launch'
END;
