"""Benchmark of the model side (issue 12): `rl estimate` of ResNet-50 (tests/torch_models.py) at batch 256 with
backward and of a BERT-base config (transformers, no weights, no hub) at batch 32 x 128 tokens, as whole processes:
wall and CPU seconds and peak memory, beside

- the peer: torch's own ``FlopCounterMode`` alone over the same model's meta-tensor forward (and backward) — what
  plain PyTorch gives (FLOPs per module, no bytes, no traffic model, no store);
- the floor: a process that imports torch and builds the same model on the meta device (what any estimate pays).

Medians of ``RL_BENCH_RUNS`` (default 3) runs per contender, interleaved; peak RSS is GNU time's %M (max over runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("RL_BENCH_RUNS", "3"))

BUILD = {
    "resnet": "import torch, torch_models\nwith torch.device('meta'):\n    model = torch_models.resnet50()\n",
    "bert": "import torch, transformers\nwith torch.device('meta'):\n"
    "    model = transformers.AutoModel.from_config(transformers.BertConfig())\n",
}
PEER = {
    "resnet": "from torch.utils.flop_counter import FlopCounterMode\n"
    "x = torch.empty(256, 3, 224, 224, device='meta')\n"
    "with FlopCounterMode(display=False) as fc:\n    model(x).sum().backward()\n",
    "bert": "from torch.utils.flop_counter import FlopCounterMode\n"
    "x = torch.empty(32, 128, dtype=torch.int64, device='meta')\n"
    "with FlopCounterMode(display=False) as fc:\n    model(x)\n",
}
BERT_FACTORY = (
    "import transformers\n\n\ndef bert_base():\n"
    "    return transformers.AutoModel.from_config(transformers.BertConfig())\n"
)


def _once(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one run of ``cmd`` (GNU time's %e %U %S %M)."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", *cmd], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    wall, user, sys_s, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_s), int(rss) / 1024


def _bench(contenders: list[list[str]], env: dict[str, str]) -> list[tuple[float, float, float]]:
    """Median wall, median CPU and max peak MiB of each contender, runs interleaved."""
    runs: list[list[tuple[float, float, float]]] = [[] for _ in contenders]
    for _ in range(RUNS):
        for i, cmd in enumerate(contenders):
            runs[i].append(_once(cmd, env))
    return [(median(r[0] for r in rs), median(r[1] for r in rs), max(r[2] for r in rs)) for rs in runs]


def _cases(rl: str, tmp: str) -> list[tuple[str, list[str], str]]:
    store = ["--gpu", "A100 SXM4 80GB", "--store", f"{tmp}/s", "--force"]
    return [
        ("ResNet-50, batch 256, training",
         [rl, "estimate", "torch_models:resnet50", "-i", "256x3x224x224", "--training", *store], "resnet"),
        ("BERT-base, batch 32 x 128",
         [rl, "estimate", "bert_base:bert_base", "-i", "32x128:int64", *store], "bert"),
    ]  # fmt: skip


def main() -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    rl, py = str(Path(sys.executable).with_name("rl")), sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bert_base.py").write_text(BERT_FACTORY)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), tmp])
        print(f"estimate, {RUNS} runs each (median wall s / median CPU s / peak MiB)")
        print(f"{'model':<32} {'rl estimate':>20} {'FlopCounterMode':>20} {'build on meta':>20} {'ratio':>6}")
        for name, cmd, key in _cases(rl, tmp):
            ours, peer, floor = _bench([cmd, [py, "-c", BUILD[key] + PEER[key]], [py, "-c", BUILD[key]]], env)
            cells = " ".join(f"{w:>7.2f}/{c:>6.2f}/{m:>5.0f}" for w, c, m in (ours, peer, floor))
            print(f"{name:<32} {cells} {ours[1] / peer[1]:>6.2f}")
        print("ratio: rl estimate CPU s / FlopCounterMode CPU s (the peer: same meta forward, FLOPs only)")


if __name__ == "__main__":
    main()
