"""rooflake.instrument: the run side (NVTX annotation of ``torch.nn.Module``s, profiler command lines, measured
ceilings, analytic per-layer estimates). torch and nvtx are the optional extra ``rooflake[torch]``; ingest, queries
and charts never import this package, and importing it imports neither (they load when first used).
"""

from rooflake.instrument.annotate import (
    BACKWARD,
    FORWARD,
    Emitter,
    NvtxEmitter,
    annotate,
    module_paths,
    path_depth,
)
from rooflake.instrument.ceilings import measure as measure_ceilings
from rooflake.instrument.profiling import ProfileResult, environment, profile

__all__ = [
    "BACKWARD",
    "FORWARD",
    "Emitter",
    "NvtxEmitter",
    "ProfileResult",
    "annotate",
    "environment",
    "measure_ceilings",
    "module_paths",
    "path_depth",
    "profile",
]
