"""rooflake.instrument: the run side (NVTX annotation of ``torch.nn.Module``s, profiler command lines, measured
ceilings, analytic per-layer estimates). torch and nvtx are the optional extra ``rooflake[torch]``; ingest, queries
and charts never import this package.
"""
