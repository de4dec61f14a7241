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

__all__ = ["BACKWARD", "FORWARD", "Emitter", "NvtxEmitter", "annotate", "module_paths", "path_depth"]
