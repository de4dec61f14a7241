"""One naming function (issue 11/12): the NVTX ranges `annotate` pushes and the `module_path` of `estimate`'s rows are
both `rooflake.instrument.module_paths` (the names `named_modules()` gives), so a profile's layers and a model's
estimates join on them. Checked on a real CPU training step of each model of tests/torch_models.py, recorded by an
emitter that keeps the range names instead of sending them to NVTX, against the estimate of the same model and
input on meta tensors. No fixture needed."""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from torch_models import ResNet50, SmallCNN, SmallLSTM  # noqa: E402

from rooflake.instrument import BACKWARD, FORWARD, annotate, module_paths  # noqa: E402
from rooflake.instrument.estimate import estimate_rows  # noqa: E402

MODELS = {
    "SmallCNN": (SmallCNN, (4, 3, 32, 32)),
    "SmallLSTM": (SmallLSTM, (4, 16, 32)),
    "ResNet50": (ResNet50, (1, 3, 224, 224)),
}


class Ranges(threading.local):
    """Keeps (phase, range name) of every range pushed, the phase being the outermost open range."""

    seen: set[tuple[str, str]] = set()

    def __init__(self) -> None:
        self.stack: list[str] = []

    def push(self, name: str) -> None:
        self.stack.append(name)
        if name not in (FORWARD, BACKWARD):
            Ranges.seen.add((self.stack[0], name))

    def pop(self) -> None:
        self.stack.pop()


@pytest.mark.parametrize("name", list(MODELS))
def test_annotated_ranges_and_estimate_module_paths_are_the_same_names(name: str) -> None:
    factory, shape = MODELS[name]
    torch.manual_seed(0)
    model, x = factory(), torch.randn(*shape)
    Ranges.seen = set()
    with annotate(model, emitter=Ranges()):
        model(x).sum().backward()
    ranges = Ranges.seen
    rows = estimate_rows(model, torch.empty(*shape, device="meta"), training=True)
    estimated = {(r["phase"], r["module_path"]) for r in rows if r["module_path"]}

    paths = set(module_paths(model).values())
    assert {n for _, n in ranges} <= paths  # every range is named by the one naming function
    assert estimated <= ranges  # every estimate row's module path is a range of the annotated run, same phase
    leaves = {p for m, p in module_paths(model).items() if p and not list(m.children())}
    for phase in (FORWARD, BACKWARD):  # and every leaf module's range holds estimated ops
        ran = {n for ph, n in ranges if ph == phase and n in leaves}
        assert ran == {n for ph, n in estimated if ph == phase and n in leaves}, phase
    assert {
        n for ph, n in ranges if ph == FORWARD
    } >= leaves  # each leaf ran (the check above is not vacuous)
