"""rooflake benchmark, run side (issue 11): what `rooflake.instrument.annotate` costs with no profiler attached.

- Per module call: a chain of 256 ``nn.ReLU`` modules on a 1-element tensor (the module call itself is almost
  free), timed annotated and not; the difference / 256 is the cost of one annotated call (forward pre- and post-hook
  and the NVTX push/pop through the ``nvtx`` package), in µs. Measured under ``torch.no_grad()`` (inference) and
  with autograd on (the post-hook also finds the call's backward nodes and hooks them), and for forward + backward.
- A ResNet-50 (tests/torch_models.py, torchvision's layer names, 161 annotated modules) at batch 1 on this CPU,
  eval mode: the forward pass (inference) and a training step (forward + backward), annotated vs not, as time and
  % overhead.

Runs alternate annotated and plain; the median of each is reported (a shared machine's noise hits both alike),
timed in CPU time of this process (``time.process_time``: time the process was preempted does not count).
Prints a table; asserts nothing. Needs torch and nvtx (``pip install 'rooflake[torch]'``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    import nvtx  # noqa: F401
    import torch
    from torch import nn
except ImportError:  # the optional extra: make bench runs without it
    print("bench_instrument: skipped, torch and nvtx are not installed (pip install '.[torch]')")
    sys.exit(0)

from rooflake.instrument import annotate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from torch_models import resnet50  # noqa: E402

CHAIN = 256


def paired(
    model: nn.Module, step: Callable[[], object], reps: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[list[float], list[float]]:
    """Seconds of each run of ``step`` by ``clock``, plain and annotated, alternating, after a warm-up of each."""
    plain, annotated = [], []
    for _ in range(2):
        step()
        with annotate(model):
            step()
    for _ in range(reps):
        t0 = clock()
        step()
        plain.append(clock() - t0)
        with annotate(model):
            t0 = clock()
            step()
            annotated.append(clock() - t0)
    return plain, annotated


def per_call() -> list[tuple[str, float, float, float]]:
    chain = nn.Sequential(*[nn.ReLU() for _ in range(CHAIN)])
    x = torch.ones(1, requires_grad=True)
    cases = {
        "forward, no_grad": lambda: _no_grad(lambda: chain(x)),
        "forward, autograd on": lambda: chain(x),
        "forward + backward": lambda: chain(x).sum().backward(),
    }
    rows = []
    for name, step in cases.items():
        # CPU time of this process: a shared machine's preemptions do not count (one thread runs this chain)
        plain, ann = (statistics.median(ts) for ts in paired(chain, step, reps=200, clock=time.process_time))
        calls = CHAIN + 1  # the chain's own call is annotated too (it is the `forward` range)
        rows.append((name, plain / calls * 1e6, ann / calls * 1e6, (ann - plain) / calls * 1e6))
    return rows


def _no_grad(fn: Callable[[], object]) -> object:
    with torch.no_grad():
        return fn()


def resnet() -> list[tuple[str, float, float, float, float]]:
    torch.manual_seed(0)
    model = resnet50().eval()
    x = torch.randn(1, 3, 224, 224)
    n_modules = sum(1 for _ in model.modules())
    rows = []
    for name, step, reps in (
        ("forward (no_grad)", lambda: _no_grad(lambda: model(x)), 9),
        ("forward + backward", lambda: model(x).sum().backward(), 5),
    ):
        plain, ann = paired(model, step, reps, clock=time.process_time)  # CPU time of both torch threads
        stats = [f(ts) * 1e3 for f in (statistics.median, min) for ts in (plain, ann)]
        rows.append(
            (f"ResNet-50 batch 1, {name}, {n_modules} modules", stats[0], stats[1], stats[2], stats[3])
        )
    return rows


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; no profiler attached")  # fmt: skip
    print(f"\nper module call ({CHAIN} x nn.ReLU on 1 element), median CPU µs per call:")
    print(f"  {'case':<24} {'plain':>8} {'annotated':>10} {'overhead':>9}")
    for name, plain, ann, over in per_call():
        print(f"  {name:<24} {plain:>8.2f} {ann:>10.2f} {over:>9.2f}")
    print("\nwhole model, CPU ms per call (all threads): median (and min) of the alternating runs:")
    print(f"  {'case':<56} {'plain':>16} {'annotated':>16} {'overhead':>16}")
    for name, plain, ann, pmin, amin in resnet():  # median plain, median annotated, min plain, min annotated
        over, omin = 100 * (ann - plain) / plain, 100 * (amin - pmin) / pmin
        print(
            f"  {name:<56} {plain:>7.1f} ({pmin:>6.1f}) {ann:>7.1f} ({amin:>6.1f}) {over:>6.2f}% ({omin:>5.2f}%)"
        )


if __name__ == "__main__":
    main()
