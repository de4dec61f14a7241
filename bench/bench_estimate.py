"""Benchmark of the model side (issue 12): `rl estimate` of ResNet-50 (tests/torch_models.py) at batch 256 and of a
BERT-base config (transformers, no weights) at batch 32 x 128 tokens, as whole processes: seconds and peak memory,
beside the floor of building the same model on the meta device and importing torch (what any estimate pays)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3

BUILD_BERT = """
import torch, transformers
cfg = transformers.BertConfig()  # BERT-base: 12 layers, hidden 768, 12 heads
with torch.device("meta"):
    model = transformers.AutoModel.from_config(cfg)
"""


def _time(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Median wall seconds and max peak RSS (MiB) of ``cmd`` over RUNS runs (GNU time's %M)."""
    walls, peaks = [], []
    for _ in range(RUNS):
        t = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], env=env, capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        if out.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
        peaks.append(int(out.stderr.strip().splitlines()[-1]) / 1024)
    return sorted(walls)[len(walls) // 2], max(peaks)


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "PYTHONWARNINGS": "ignore"}
    rl = str(Path(sys.executable).with_name("rl"))
    with tempfile.TemporaryDirectory() as tmp:
        env["BERT_FACTORY_DIR"] = tmp
        (Path(tmp) / "bert_base.py").write_text(
            "import torch, transformers\n\ndef bert_base():\n    return transformers.AutoModel.from_config("
            "transformers.BertConfig())\n"
        )
        env["PYTHONPATH"] += os.pathsep + tmp
        cases = [
            ("estimate ResNet-50, batch 256, training", [rl, "estimate", "torch_models:resnet50", "-i",
             "256x3x224x224", "--training", "--gpu", "A100 SXM4 80GB", "--store", f"{tmp}/s", "--force"],
             [sys.executable, "-c", "import torch, torch_models\nwith torch.device('meta'): torch_models.resnet50()"]),
            ("estimate BERT-base, batch 32 x 128", [rl, "estimate", "bert_base:bert_base", "-i", "32x128:int64",
             "--gpu", "A100 SXM4 80GB", "--store", f"{tmp}/s", "--force"], [sys.executable, "-c", BUILD_BERT]),
        ]  # fmt: skip
        print(f"{'work':<42} {'rooflake s':>10} {'MiB':>6} {'floor s':>8} {'MiB':>6} {'ratio':>6}")
        for name, cmd, floor in cases:
            (t, m), (tf, mf) = _time(cmd, env), _time(floor, env)
            print(f"{name:<42} {t:>10.2f} {m:>6.0f} {tf:>8.2f} {mf:>6.0f} {t / tf:>6.2f}")
        print("floor: a process that imports torch and builds the same model on the meta device")


if __name__ == "__main__":
    main()
