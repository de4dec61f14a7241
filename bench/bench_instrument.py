"""rooflake benchmark, run side (issue 11): what `rooflake.instrument.annotate` costs with no profiler attached.

- Per module call: a chain of 256 ``nn.ReLU`` modules on a 1-element tensor (the module call itself is almost
  free), timed annotated and not; the difference / 256 is the cost of one annotated call (forward pre- and post-hook
  and the NVTX push/pop through the ``nvtx`` package), in µs. Measured under ``torch.no_grad()`` (inference) and
  with autograd on (the post-hook also finds the call's backward nodes and hooks them), and for forward + backward.
- A ResNet-50 (tests/torch_models.py, torchvision's layer names; 151 modules, 182 module ranges per forward: each
  block's ReLU is called three times) at batch 1 on this CPU, eval mode, one torch thread (two threads' OpenMP
  workers spin while they wait, and on a loaded machine that spinning is most of the CPU time measured): the
  forward pass (inference) and a training step (forward + backward), annotated vs not, as time and % overhead;
  and the same overhead predicted from the per-call cost (calls per pass x µs per call / the plain pass), which a
  loaded machine disturbs far less than a difference of two ~0.4 s passes.

Runs alternate annotated and plain; the median of each is reported (a shared machine's noise hits both alike),
timed in CPU time of this process (``time.process_time``: time the process was preempted does not count).
Prints a table with the load average beside it; asserts nothing. Needs torch and nvtx
(``pip install 'rooflake[torch]'``).
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
    """Seconds of each run of ``step`` by ``clock``, plain and annotated, alternating (which goes first alternates
    too: ABBA), after a warm-up of each."""
    plain, annotated = [], []
    for _ in range(2):
        step()
        with annotate(model):
            step()
    for i in range(reps):
        for annotated_run in (False, True) if i % 2 == 0 else (True, False):
            if annotated_run:
                with annotate(model):
                    t0 = clock()
                    step()
                    annotated.append(clock() - t0)
            else:
                t0 = clock()
                step()
                plain.append(clock() - t0)
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


class Count:
    """An annotate emitter that counts the module ranges pushed (not the parent ranges forward/backward)."""

    def __init__(self) -> None:
        self.n = 0

    def push(self, name: str) -> None:
        self.n += name not in ("forward", "backward")

    def pop(self) -> None:
        pass


def calls_per_step(model: nn.Module, step: Callable[[], object]) -> int:
    """Module ranges one ``step`` pushes (a forward under no_grad: the module calls of one forward)."""
    count = Count()
    with annotate(model, emitter=count):
        step()
    return count.n


def resnet() -> list[tuple[str, int, float, float, float, float]]:
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = resnet50().eval()
    x = torch.randn(1, 3, 224, 224)
    rows = []
    forward = lambda: _no_grad(lambda: model(x))  # noqa: E731
    calls = calls_per_step(model, forward)
    for name, step, reps in (
        ("forward (no_grad)", forward, 15),
        ("forward + backward", lambda: model(x).sum().backward(), 7),
    ):
        plain, ann = paired(model, step, reps, clock=time.process_time)
        stats = [f(ts) * 1e3 for f in (statistics.median, min) for ts in (plain, ann)]
        rows.append((name, calls, stats[0], stats[1], stats[2], stats[3]))
    torch.set_num_threads(threads)
    return rows


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; no profiler attached")  # fmt: skip
    print(f"\nper module call ({CHAIN} x nn.ReLU on 1 element), median CPU µs per call:")
    print(f"  {'case':<24} {'plain':>8} {'annotated':>10} {'overhead':>9}")
    cost = {}
    for name, plain, ann, over in per_call():
        cost[name] = over
        print(f"  {name:<24} {plain:>8.2f} {ann:>10.2f} {over:>9.2f}")
    print(
        "\nResNet-50 batch 1, 1 thread, CPU ms per pass: median (and min) of the alternating runs; the overhead"
    )
    print(
        "measured (median vs median) and predicted (module calls per forward x the overhead per call above, its"
    )
    print("forward + backward row for a training step, / the plain median):")
    print(f"  {'case':<20} {'calls':>5} {'plain':>16} {'annotated':>16} {'measured':>9} {'predicted':>9}")
    per = {"forward (no_grad)": cost["forward, no_grad"], "forward + backward": cost["forward + backward"]}
    for name, calls, plain, ann, pmin, amin in resnet():
        over, pred = 100 * (ann - plain) / plain, 100 * calls * per[name] / 1e3 / plain
        print(
            f"  {name:<20} {calls:>5} {plain:>7.1f} ({pmin:>6.1f}) {ann:>7.1f} ({amin:>6.1f})"
            f" {over:>8.2f}% {pred:>8.2f}%"
        )
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)")


if __name__ == "__main__":
    main()
