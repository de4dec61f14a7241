"""What ``rl estimate`` is given, turned into objects: a model factory (``PACKAGE.MODULE:FACTORY``), input specs
(``1x3x224x224:float32``) and a GPU name (looked up in the datasheet catalog for the traffic model)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from rooflake.instrument.traffic import GpuSpec
from rooflake.schema import BadArgument, ToolMissingError, UsageError
from rooflake.schema import datasheets as ds

INPUT_SPEC = re.compile(r"^(?P<shape>\d+(?:[x,]\d+)*)(?::(?P<dtype>[a-z0-9_]+))?$")


def raised(e: BaseException) -> str:
    """One line on an exception the user's code raised: ``Type: message (file:line)``, the place being the
    innermost frame (a SyntaxError's message holds its own)."""
    import traceback

    text = " ".join(str(e).split())[:300]
    out = type(e).__name__ + (f": {text}" if text else "")
    frames = traceback.extract_tb(e.__traceback__)
    if frames and not isinstance(e, SyntaxError):
        out += f" ({frames[-1].filename}:{frames[-1].lineno})"
    return out


def load_factory(spec: str) -> Any:
    """The callable named by ``PACKAGE.MODULE:FACTORY`` (the current directory is importable, as for ``python -m``).
    Raises :class:`BadArgument` for a spec without ``:``, :class:`UsageError` naming the spec when it cannot be
    imported (whatever importing the module raised: a syntax error, an exception at its top level) or is not
    callable."""
    module, _, attr = spec.partition(":")
    if not module or not attr:  # (a malformed argument: exit 2)
        raise BadArgument(
            f"model {spec!r}: expected PACKAGE.MODULE:FACTORY (e.g. torchvision.models:resnet50)"
        )
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"model {spec!r}: cannot import it ({e})") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module ran: what it raised is theirs to fix
        raise UsageError(f"model {spec!r}: importing {module} raised {raised(e)}") from None
    if not callable(obj):
        raise UsageError(f"model {spec!r}: {attr} is not callable")
    return obj


def build_model(spec: str) -> Any:
    """Call the factory under ``torch.device('meta')``: parameters are created without memory or initialisation.
    Raises :class:`UsageError` naming the spec when the factory raises or returns no ``torch.nn.Module``."""
    import torch

    factory = load_factory(spec)
    try:
        with torch.device("meta"):
            model = factory()
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's factory: what it raised is theirs to fix
        raise UsageError(f"model {spec!r}: calling it raised {raised(e)}") from None
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"model {spec!r}: it returned {type(model).__name__}, not a torch.nn.Module")
    return model


def parse_input(spec: str) -> Any:
    """A meta tensor from ``1x3x224x224[:dtype]`` (dtype a torch name: float32, bfloat16, int64...; default
    float32). Raises :class:`BadArgument` (a :class:`UsageError`: exit 2) for a malformed spec or an unknown
    dtype."""
    import torch

    m = INPUT_SPEC.match(spec.strip())
    if not m:
        raise BadArgument(
            f"--input {spec!r}: expected a shape like 1x3x224x224, optionally :dtype (e.g. :float16)"
        )
    dtype = getattr(torch, m["dtype"] or "float32", None)
    if not isinstance(dtype, torch.dtype):
        raise BadArgument(f"--input {spec!r}: unknown dtype {m['dtype']!r}")
    shape = [int(d) for d in re.split("[x,]", m["shape"])]
    return torch.empty(shape, dtype=dtype, device="meta")


def gpu_spec(name: str) -> tuple[GpuSpec, str]:
    """The traffic model's view of a GPU from the datasheet catalog: (spec, catalog name). ``name`` may be a
    device name (``NVIDIA A100-SXM4-40GB``) or a catalog key. Raises :class:`BadArgument` when it matches no GPU or
    several, :class:`UsageError` for one without SM count and L2 size."""
    key = ds.one_gpu(name)
    props = {r["quantity"]: r["value"] for r in ds.numbers().to_pylist() if r["gpu"] == key}
    if "SM_COUNT" not in props or "L2_BYTES" not in props:
        raise UsageError(f"--gpu {name!r}: the datasheet catalog lacks the SM count or L2 size of {key}")
    return GpuSpec(key, int(props["SM_COUNT"]), int(props["L2_BYTES"])), key


def estimate_spec(
    factory: str,
    inputs: list[str],
    *,
    dtype: str | None = None,
    training: bool = False,
    gpu: str | None = None,
) -> tuple[Any, str, dict[str, Any]]:
    """Estimate the model a factory builds on the inputs given as specs: (``estimates`` table, identity text for
    the run id, fields for the ``runs`` row). See :func:`rooflake.instrument.estimate.estimate`. Raises
    :class:`UsageError` naming the model (and the inputs) for a spec that cannot be imported or built, bad inputs,
    or a model that does not run on them (whatever its code raised); :class:`ToolMissingError` without torch (the
    optional extra: it ended in a traceback)."""
    try:
        import torch
    except ImportError as e:
        raise ToolMissingError("rl estimate needs torch: pip install 'rooflake[torch]'") from e

    from rooflake.instrument.estimate import estimate

    if not inputs:
        raise UsageError("give at least one --input SHAPE[:DTYPE]")
    cast = None
    if dtype is not None:
        cast = getattr(torch, dtype, None)
        if not isinstance(cast, torch.dtype) or not cast.is_floating_point:  # (int8 failed in the model)
            raise BadArgument(
                f"--dtype {dtype!r}: not a floating-point torch dtype (float32, float16, bfloat16, ...)"
            )
    spec, gpu_key = gpu_spec(gpu) if gpu else (None, None)
    model = build_model(factory)
    example = tuple(parse_input(s) for s in inputs)
    run_on = f"model {factory!r} on --input {' '.join(inputs)}"
    try:
        table = estimate(model, example, dtype=cast, training=training, gpu=spec)
    except UsageError as e:  # the model does not run on these inputs: say which model and inputs
        raise UsageError(f"{run_on}: {e}") from None
    except Exception as e:  # noqa: BLE001 - the model's forward is the user's code: what it raised is theirs
        raise UsageError(f"{run_on}: the model raised {raised(e)}") from None
    identity = (
        f"torch-model:{factory} inputs={','.join(inputs)} dtype={dtype or 'as-built'} "
        f"training={training} gpu={gpu_key or 'none'}"
    )
    fields = {
        "gpu_name": gpu_key,
        "command_line": identity,
        "producer": f"rooflake.instrument.estimate (torch {torch.__version__})",
    }
    return table, identity, fields
