-- run_model_domains: the NVTX domains under which a run's kernels ran inside a `forward` or `backward` range (the
-- ranges rooflake.instrument.annotate pushes, one domain per annotated model), with their launches: the domain to
-- compare with an `rl estimate` run (estimate_vs_measured's $domain).
-- Parameters: $run_id.
-- Columns:
--   domain               NVTX domain of the kernels
--   launches             kernel launches under forward/backward ranges of that domain
SELECT nvtx_domain AS domain, count(*) AS launches
FROM kernels
WHERE run_id = $run_id AND nvtx_stack[1] IN ('forward', 'backward') AND nvtx_domain IS NOT NULL
GROUP BY nvtx_domain
ORDER BY launches DESC, domain
