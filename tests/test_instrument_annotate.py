"""`rooflake.instrument.annotate`: one NVTX range per module call, forward and backward, named by module path.

Ranges are recorded with a recording emitter (push/pop per thread, as NVTX keeps them) and, in the last test, by a
real `nsys profile --trace=nvtx,osrt` of a script run with the `nvtx` package, ingested into a store.
Needs torch (the `rooflake[torch]` extra); no fixture.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from rooflake.instrument import annotate, module_paths  # noqa: E402


class Recorder:
    """An emitter that keeps NVTX's semantics: one push/pop stack per thread. ``ranges`` holds, per push, the
    thread and the full stack as a path ('forward/1/1.conv1')."""

    def __init__(self) -> None:
        self.stacks: dict[int, list[str]] = {}
        self.ranges: list[tuple[int, str]] = []
        self.lock = threading.Lock()

    def push(self, name: str) -> None:
        t = threading.get_ident()
        with self.lock:
            st = self.stacks.setdefault(t, [])
            st.append(name)
            self.ranges.append((t, "/".join(st)))

    def pop(self) -> None:
        t = threading.get_ident()
        with self.lock:
            self.stacks[t].pop()  # an unbalanced pop raises here

    def paths(self, thread: int | None = None) -> list[str]:
        return [p for t, p in self.ranges if thread is None or t == thread]

    def balanced(self) -> bool:
        return all(not s for s in self.stacks.values())


class Block(nn.Module):
    """A residual block with an in-place ReLU used twice (a module called twice per forward)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.relu(self.conv2(self.relu(self.bn(self.conv1(x)))) + x)


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), Block(4), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)
    )


FORWARD = [
    "forward",
    "forward/0",
    "forward/1",
    "forward/1/1.conv1",
    "forward/1/1.bn",
    "forward/1/1.relu",
    "forward/1/1.conv2",
    "forward/1/1.relu",
    "forward/2",
    "forward/3",
    "forward/4",
]
BACKWARD = [
    "backward",
    "backward/4",
    "backward/3",
    "backward/2",
    "backward/1",
    "backward/1/1.relu",
    "backward/1/1.conv2",
    "backward/1/1.relu",
    "backward/1/1.bn",
    "backward/1/1.conv1",
    "backward/0",
]


def test_module_paths_are_named_modules_names() -> None:
    m = cnn()
    paths = module_paths(m)
    assert paths[m] == ""
    assert paths[m[1].conv2] == "1.conv2"
    assert list(paths.values()) == [n for n, _ in m.named_modules()]


def test_forward_and_backward_ranges_nest_as_the_modules() -> None:
    m, rec = cnn(), Recorder()
    with annotate(m, emitter=rec):
        m(torch.randn(2, 3, 8, 8)).sum().backward()
    assert rec.paths() == FORWARD + BACKWARD
    assert rec.balanced()


def test_backward_ranges_are_pushed_by_the_thread_that_runs_the_backward() -> None:
    """The autograd engine runs a backward on the thread that executes its nodes (a device thread on a GPU;
    here the thread that calls backward): the backward ranges are on that thread, balanced there."""
    m, rec = cnn(), Recorder()
    with annotate(m, emitter=rec):
        loss = m(torch.randn(2, 3, 8, 8)).sum()
        worker = threading.Thread(target=loss.backward)
        worker.start()
        worker.join()
    assert rec.paths(threading.get_ident()) == FORWARD
    assert rec.paths(worker.ident) == BACKWARD
    assert rec.balanced()


def test_each_backward_range_encloses_its_own_nodes() -> None:
    """A leaf module's backward nodes run inside its range; the parent's own op (the residual add) runs inside the
    parent's range but outside every child's."""
    m, rec = cnn(), Recorder()
    seen: dict[str, str] = {}
    with annotate(m, emitter=rec):
        y = m(torch.randn(2, 3, 8, 8)).sum()
        # hooks registered after annotate's own: they see the stack as the node's computation does
        (add,) = [n for n in _nodes(y.grad_fn) if n.name().startswith("AddBackward")]
        conv2, _ = add.next_functions[0]  # conv2(...) + x: the first operand's node
        t = threading.get_ident()

        def note(key):  # a pre-hook registered after annotate's: it sees the stack the node runs in
            def hook(grad_outputs):
                seen.setdefault(key, "/".join(rec.stacks[t]))

            return hook

        add.register_prehook(note("add"))
        conv2.register_prehook(note("conv"))
        y.backward()
    assert seen == {"add": "backward/1", "conv": "backward/1/1.conv2"}


def _nodes(root):
    todo, seen = [root], []
    while todo:
        n = todo.pop()
        if n is None or n in seen:
            continue
        seen.append(n)
        todo.extend(c for c, _ in n.next_functions)
    return seen


def test_depth_limits_the_ranges() -> None:
    m, rec = cnn(), Recorder()
    with annotate(m, emitter=rec, depth=1, backward=False):
        m(torch.randn(1, 3, 8, 8)).sum().backward()
    assert rec.paths() == ["forward", "forward/0", "forward/1", "forward/2", "forward/3", "forward/4"]


def test_a_submodule_called_alone_goes_under_forward_and_backward() -> None:
    m, rec = cnn(), Recorder()
    with annotate(m, emitter=rec):
        m[1](torch.randn(1, 4, 4, 4, requires_grad=True)).sum().backward()
    assert rec.paths()[:2] == ["forward", "forward/1"]
    assert "backward/1/1.conv1" in rec.paths()
    assert rec.balanced()


def test_lstm_and_no_grad() -> None:
    torch.manual_seed(0)
    lstm = nn.ModuleDict({"rnn": nn.LSTM(8, 16, batch_first=True), "head": nn.Linear(16, 4)})

    def step(x):
        out, _ = lstm["rnn"](x)
        return lstm["head"](out[:, -1])

    rec = Recorder()
    with annotate(lstm, emitter=rec):
        step(torch.randn(2, 5, 8)).sum().backward()
        with torch.no_grad():
            step(torch.randn(2, 5, 8))
    assert rec.paths() == [
        "forward",
        "forward/rnn",
        "forward",
        "forward/head",
        "backward",
        "backward/head",
        "backward",
        "backward/rnn",
        "forward",
        "forward/rnn",
        "forward",
        "forward/head",
    ]
    assert rec.balanced()


def test_every_hook_is_removed_on_exit() -> None:
    m, rec = cnn(), Recorder()
    with annotate(m, emitter=rec):
        y = m(torch.randn(1, 3, 8, 8)).sum()  # a graph built inside, differentiated after the block
    n = len(rec.ranges)
    for mod in m.modules():
        assert not mod._forward_hooks and not mod._forward_pre_hooks
        assert not mod._backward_hooks and not mod._backward_pre_hooks
    y.backward()
    m(torch.randn(1, 3, 8, 8)).sum().backward()
    assert len(rec.ranges) == n
    assert rec.balanced()


def test_results_and_gradients_are_unchanged() -> None:
    x = torch.randn(4, 3, 8, 8)
    grads = []
    outs = []
    for annotated in (False, True):
        m = cnn()
        ctx = annotate(m, emitter=Recorder()) if annotated else _null()
        with ctx:
            y = m(x)
            y.square().sum().backward()
        outs.append(y.detach())
        grads.append([p.grad.clone() for p in m.parameters()])
    assert torch.equal(outs[0], outs[1])
    assert all(torch.equal(a, b) for a, b in zip(grads[0], grads[1], strict=True))


def test_decorator() -> None:
    m, rec = cnn(), Recorder()

    @annotate(m, emitter=rec, backward=False)
    def infer(x):
        return m(x)

    infer(torch.randn(1, 3, 8, 8))
    infer(torch.randn(1, 3, 8, 8))
    assert rec.paths() == FORWARD * 2
    assert not m[0]._forward_hooks


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


NSYS = shutil.which("nsys")

SCRIPT = """
import torch
from torch import nn
from rooflake.instrument import annotate

torch.manual_seed(0)
m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.Flatten(), nn.Linear(4 * 8 * 8, 2))
with annotate(m):
    for _ in range(2):
        m(torch.randn(2, 3, 8, 8)).sum().backward()
"""


def _importer() -> Path:
    """QdstrmImporter next to a link on the way to `nsys` (Debian: /usr/bin/nsys -> /usr/lib/nsight-systems/bin/nsys)."""
    link = Path(NSYS)
    while True:
        for base in (link.parent.parent, link.parent):
            if (base / "host-linux-x64" / "QdstrmImporter").exists():
                return base / "host-linux-x64" / "QdstrmImporter"
        if not link.is_symlink():
            raise AssertionError(f"no QdstrmImporter near {NSYS}")
        link = Path(os.path.normpath(link.parent / link.readlink()))


def _record(script: Path, out: Path) -> Path:
    """`nsys profile --trace=nvtx,osrt` of `python script` (CPU sampling and context switches off: this nsys hangs
    with them, see test_nsys_rep_e2e.py); a .qdstrm left by the Debian package is converted with its importer."""
    cmd = [NSYS, "profile", "--trace=nvtx,osrt", "--sample=none", "--cpuctxsw=none", "-o", str(out)]
    p = subprocess.run([*cmd, sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rep, qdstrm = out.with_suffix(".nsys-rep"), out.with_suffix(".qdstrm")
    if not rep.exists() and qdstrm.exists():
        importer = _importer()
        q = subprocess.run([str(importer), "-i", str(qdstrm)], capture_output=True, text=True, timeout=300)
        assert q.returncode == 0, q.stdout + q.stderr
    assert rep.exists(), p.stdout + p.stderr
    return rep


@pytest.mark.skipif(
    NSYS is None, reason="NVIDIA Nsight Systems `nsys` is not on PATH (../shared/tools/install-nsight.sh)"
)
def test_real_nsys_records_the_ranges(tmp_path: Path) -> None:
    """The `nvtx` package's ranges, recorded by Nsight Systems 2022.4 and ingested: forward and backward of two
    steps, nested one level under `forward` / `backward`, all on the main thread (CPU autograd runs there)."""
    pytest.importorskip("nvtx")
    import duckdb

    from rooflake.pipeline import ingest_file

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    rep = _record(script, tmp_path / "rec")
    store = tmp_path / "store"
    ingest_file(rep, store)
    sql = "SELECT domain, name, depth, thread FROM read_parquet($files) ORDER BY start_ns"
    rows = duckdb.execute(sql, {"files": str(store / "ranges" / "*" / "*.parquet")}).fetchall()
    rows = [dict(zip(("domain", "name", "depth", "thread"), r, strict=True)) for r in rows]
    step = [("forward", 0), ("0", 1), ("1", 1), ("2", 1), ("3", 1)]
    step += [("backward", 0), ("3", 1), ("2", 1), ("1", 1), ("0", 1)]
    assert [(x["name"], x["depth"]) for x in rows] == step * 2
    assert {x["domain"] for x in rows} == {"rooflake"}
    assert len({x["thread"] for x in rows}) == 1
