-- coverage_summary: how a run's GPU work was attributed to NVTX ranges, per device and attribution reason
-- (coverage table, memcpy/memset and kernels together), with the shares of operations and of GPU time.
-- Parameters: $run_id.
-- Columns:
--   run_id               run
--   device_id            CUDA device
--   attribution          push_pop | start_end | none | ... (coverage.attribution)
--   ops                  kernels + memops so attributed
--   gpu_time_ns          ns, their GPU time
--   share_of_ops         ops / the device's ops
--   share_of_gpu_time    gpu_time_ns / the device's GPU time
SELECT
    run_id,
    device_id,
    attribution,
    sum(ops)::BIGINT AS ops,
    sum(gpu_time_ns)::BIGINT AS gpu_time_ns,
    (sum(ops) / sum(sum(ops)) OVER (PARTITION BY device_id))::DOUBLE AS share_of_ops,
    (sum(gpu_time_ns) / sum(sum(gpu_time_ns)) OVER (PARTITION BY device_id))::DOUBLE AS share_of_gpu_time
FROM coverage
WHERE run_id = $run_id
GROUP BY run_id, device_id, attribution
ORDER BY device_id, attribution
