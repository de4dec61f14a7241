"""Measured ceilings of the machine a model runs on: what torch reaches at best, written as a JSON document that
:mod:`rooflake.ingest.measured_json` ingests as ``ceilings`` rows with ``source = 'measured'``.

Every value is the best (shortest) of several timed repetitions after a warm-up, as ERT and STREAM report peaks:

- compute, per dtype: ``torch.mm`` of two n×n matrices; FLOP/s = 2·n³ / t (one multiply-add = 2 FLOPs).
  CPU: fp64, fp32, bf16 (where it runs) at each thread count (``torch.set_num_threads``), the higher of
  ``torch.mm`` (BLAS) and a 3×3 ``conv2d`` (oneDNN; FLOP/s = 2·N·K·C·R·S·P·Q / t), because torch's BLAS can take a
  slow path (MKL on AMD CPUs) while the convolutions of a CNN run on oneDNN; GPU: fp64, fp32, tf32
  (fp32 with ``allow_tf32``), fp16, bf16 and fp8 (``torch._scaled_mm``, CC ≥ 8.9) where supported. On a GPU each
  GEMM ceiling is named by the roof cuBLAS reaches it on (:func:`gpu_ceiling`): ``TENSOR FP16``, ``TENSOR BF16``,
  ``TENSOR TF32``, ``TENSOR FP8`` and, on GPUs with FP64 Tensor Cores, ``TENSOR FP64`` — the names of the report's
  and the datasheet's Tensor-Core roofs, which they are compared with — and ``FP32`` (no TF32: plain FFMA). An
  H100 measured 755 TFLOP/s in fp16 and 61 in fp64: named ``FP16`` and ``FP64`` they stood beside the report's
  non-tensor pipes (121 and 30 TFLOP/s) as 6.2× and 2.0× those peaks.
- bandwidth: ``dst.copy_(src)``; byte/s = 2·nbytes / t (one read and one write of the buffer, STREAM's "Copy"
  convention; a write-allocate read is not counted). ``DRAM``: buffers ≥ 4× the last-level cache (CPU) or 1 GiB
  (GPU, device-to-device); ``L2``: buffers that stay in L2 (CPU: half of each core's L2 per thread; GPU: a quarter
  of the L2), copied back to back. On a GPU the L2 copies are replayed from a CUDA graph: launched one by one from
  Python, a copy of a few MB finishes faster than the host launches the next (measured on an H100: 2.6 TB/s,
  below its DRAM copy), so the figure would be the launch rate, not the cache's bandwidth.
- launch overhead ``t_o`` (GPU, the time-based roofline's floor, Wang et al. arXiv 2009.04598): wall time of N
  back-to-back one-element ``add_`` launches / N, synchronized once at the end (PyTorch eager's per-kernel floor).

CPU ceilings are keyed per thread count (``machine_key`` = ``host | cpu | N threads``): a CPU's peak scales with
the cores a run uses, and a run labelled ``threads=N`` is compared with the roofs of N threads.
"""

from __future__ import annotations

import functools
import json
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rooflake.schema import ToolMissingError, UsageError

FORMAT_KEY = "rooflake_measured_ceilings"  # the key measured_json.sniff looks for
FORMAT_VERSION = 1
CPU_DTYPES = ("fp64", "fp32", "bf16")
GPU_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
CEILING_OF = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16", "fp8": "FP8"}
# GPUs with FP64 Tensor Cores (DMMA; cuBLAS runs DGEMM on them): GA100, GH100, GB100 (the architecture whitepapers)
FP64_TENSOR_CC = ((8, 0), (9, 0), (10, 0))
GEMM_FORMULA = (
    "best of {reps} torch.mm of n x n {dtype} matrices (n = {n}) after a warm-up; FLOP/s = 2 n^3 / t"
)
COPY_FORMULA = (
    "best of {reps} dst.copy_(src) of {nbytes} bytes ({where}); byte/s = 2 nbytes / t (STREAM Copy)"
)


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ToolMissingError("measuring ceilings needs torch: pip install 'rooflake[torch]'") from e
    return torch


def best_time(
    fn: Callable[[], Any], *, sync: Callable[[], Any] | None = None, budget_s: float = 0.5
) -> tuple[float, int]:
    """(shortest time in s, repetitions) of ``fn`` after one warm-up call: repeats until ``budget_s`` is spent,
    at least 3 and at most 100 times. ``sync`` (e.g. ``torch.cuda.synchronize``) runs after each call, inside the
    timing."""
    fn()
    if sync:
        sync()
    best, reps, spent = float("inf"), 0, 0.0
    while reps < 3 or (spent < budget_s and reps < 100):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        dt = time.perf_counter() - t0
        best, reps, spent = min(best, dt), reps + 1, spent + dt
    return best, reps


def cpu_caches() -> dict[str, int]:
    """Data cache sizes of CPU 0 in bytes (``L1``, ``L2``, ``L3`` as Linux's sysfs lists them; {} elsewhere)."""
    out: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = (index / "level").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        out[f"L{level}"] = int(size.rstrip("KMG")) * mult
    return out


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else ``platform.processor()``, else 'unknown cpu'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def _row(
    ceiling: str, kind: str, value: float, key: str, method: str, name: str, details: dict
) -> dict[str, Any]:
    unit = "FLOP/s" if kind == "compute" else ("s" if kind == "latency" else "byte/s")
    return {
        "ceiling": ceiling,
        "kind": kind,
        "value": value,
        "unit": unit,
        "machine_key": key,
        "method": method,
        "source_name": name,
        "details": details,
    }


def gpu_ceiling(dtype: str, capability: tuple[int, int], name: str) -> str | None:
    """The ceiling a ``torch.mm`` of ``dtype`` measures on a GPU of this compute capability and device name: the
    Tensor-Core roof where cuBLAS runs the GEMM on Tensor Cores (fp16 from Volta, CC 7.0, but not on a GTX 16xx,
    whose TU116/TU117 have none; bf16 and tf32 from Ampere, CC 8.0; fp8 from CC 8.9; fp64 on :data:`FP64_TENSOR_CC`),
    else the pipe of that precision (``FP16``, ``BF16``, ``FP64``, ``FP32``). None for tf32 before Ampere, where
    ``allow_tf32`` changes nothing and the GEMM would measure FP32 again, and for fp8 before CC 8.9 (no fp8 GEMM)."""
    tensor_cores = capability >= (7, 0) and "GTX 16" not in name
    tensor = {
        "fp16": tensor_cores,
        "bf16": tensor_cores and capability >= (8, 0),
        "tf32": tensor_cores and capability >= (8, 0),
        "fp8": tensor_cores and capability >= (8, 9),
        "fp64": capability in FP64_TENSOR_CC,
    }.get(dtype, False)
    if dtype in ("tf32", "fp8") and not tensor:
        return None
    return f"TENSOR {CEILING_OF[dtype]}" if tensor else CEILING_OF[dtype]


def gemm_row(
    torch: Any,
    dtype: str,
    n: int,
    key: str,
    *,
    device: str = "cpu",
    ceiling: str | None = None,
    **details: Any,
) -> dict[str, Any] | None:
    """One GEMM ceiling (see the module docstring), named ``ceiling`` (default: the pipe of ``dtype``, e.g. BF16);
    None when torch cannot multiply ``dtype`` on ``device``."""
    tdtype = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32}.get(dtype)
    tdtype = tdtype or {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dtype)
    if tdtype is None:
        return None
    try:
        a = torch.randn(n, n, device=device).to(tdtype)
        b = torch.randn(n, n, device=device).to(tdtype)
        sync = torch.cuda.synchronize if device == "cuda" else None
        t, reps = best_time(lambda: torch.mm(a, b), sync=sync)
    except RuntimeError as e:  # "not implemented for 'BFloat16'" and the like
        details["skipped"] = str(e).splitlines()[0]
        return None
    method = GEMM_FORMULA.format(reps=reps, dtype=dtype, n=n)
    name = f"torch.mm {dtype} n={n}" + (f", {details['threads']} threads" if "threads" in details else "")
    return _row(
        ceiling or CEILING_OF[dtype],
        "compute",
        2.0 * n**3 / t,
        key,
        method,
        name,
        {**details, "n": n, "best_s": t},
    )


CONV_FORMULA = (
    "best of {reps} conv2d of a {shape} {dtype} input with a {k}x{c}x3x3 weight, padding 1 (oneDNN) after a "
    "warm-up; FLOP/s = 2 N K C R S P Q / t (direct-convolution count)"
)


def conv_row(torch: Any, dtype: str, key: str, *, c: int = 128, **details: Any) -> dict[str, Any] | None:
    """A CPU compute ceiling through oneDNN: a 3×3 convolution (8×c×32×32 input, c output channels). On CPUs where
    torch's BLAS takes a slow path (MKL on AMD), oneDNN's convolution is the faster GEMM-like kernel, and the layers
    of a CNN run on it. None for dtypes oneDNN does not take (fp64)."""
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16}.get(dtype)
    if tdtype is None:
        return None
    n, hw = 8, 32
    x = torch.randn(n, c, hw, hw).to(tdtype)
    w = torch.randn(c, c, 3, 3).to(tdtype)
    try:
        t, reps = best_time(lambda: torch.nn.functional.conv2d(x, w, padding=1))
    except RuntimeError as e:
        details["skipped"] = str(e).splitlines()[0]
        return None
    flops = 2.0 * n * c * c * 9 * hw * hw
    method = CONV_FORMULA.format(reps=reps, shape=f"{n}x{c}x{hw}x{hw}", dtype=dtype, k=c, c=c)
    name = f"conv2d 3x3 {dtype} c={c}" + (f", {details['threads']} threads" if "threads" in details else "")
    return _row(
        CEILING_OF[dtype], "compute", flops / t, key, method, name, {**details, "flops": flops, "best_s": t}
    )


def best_gemm_row(torch: Any, dtype: str, n: int, key: str, **details: Any) -> dict[str, Any] | None:
    """The higher of the CPU's ``torch.mm`` (BLAS) and 3×3 ``conv2d`` (oneDNN) ceilings of ``dtype``: a peak is
    the best the machine has been measured to do; ``method`` names the kernel that reached it and ``details`` keeps
    the other's value (``other_flops_per_s``)."""
    rows = [
        r for r in (gemm_row(torch, dtype, n, key, **details), conv_row(torch, dtype, key, **details)) if r
    ]
    if not rows:
        return None
    rows.sort(key=lambda r: r["value"], reverse=True)
    if len(rows) > 1:
        rows[0]["details"]["other_flops_per_s"] = {rows[1]["source_name"]: rows[1]["value"]}
    return rows[0]


def copy_row(
    torch: Any, ceiling: str, nbytes: int, key: str, where: str, *, device: str = "cpu", **details: Any
) -> dict[str, Any]:
    """One copy-bandwidth ceiling of two ``nbytes`` float32 buffers (see the module docstring)."""
    n = max(nbytes // 4, 1)
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    sync = torch.cuda.synchronize if device == "cuda" else None
    inner = max(
        1, int(64 * 2**20 // (n * 4))
    )  # small buffers: many copies per timing, so the clock resolves them

    def copies() -> None:
        for _ in range(inner):
            dst.copy_(src)

    t, reps = best_time(copies, sync=sync)
    method = COPY_FORMULA.format(reps=reps, nbytes=n * 4, where=where)
    if inner > 1:
        method += f"; {inner} copies per timing"
    name = f"copy_ {n * 4} B ({where})" + (f", {details['threads']} threads" if "threads" in details else "")
    return _row(ceiling, "bandwidth", 2.0 * n * 4 * inner / t, key, method, name, {**details, "bytes": n * 4})


def graph_copy_row(
    torch: Any, ceiling: str, nbytes: int, key: str, where: str, copies: int = 256
) -> dict[str, Any]:
    """A GPU copy-bandwidth ceiling of two ``nbytes`` float32 buffers, ``copies`` back-to-back ``copy_`` kernels
    captured in one CUDA graph and timed per replay (best of the budget), so the GPU runs the copies with no host
    launch between them. byte/s = 2 · nbytes · copies / t (STREAM Copy, as :func:`copy_row`)."""
    n = max(nbytes // 4, 1)
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    side = torch.cuda.Stream()  # warm-up off the default stream before capture, as torch.cuda.graphs asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dst.copy_(src)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(copies):
            dst.copy_(src)
    t, reps = best_time(graph.replay, sync=torch.cuda.synchronize)
    method = COPY_FORMULA.format(reps=reps, nbytes=n * 4, where=where)
    method += f"; {copies} copies per timing, replayed from one CUDA graph"
    name = f"copy_ {n * 4} B ({where}, CUDA graph)"
    details = {"bytes": n * 4, "copies": copies, "best_s": t}
    return _row(ceiling, "bandwidth", 2.0 * n * 4 * copies / t, key, method, name, details)


def measure_cpu(
    threads: list[int] | tuple[int, ...] = (1, 2), dtypes: tuple[str, ...] = CPU_DTYPES, n: int = 1024
) -> list[dict[str, Any]]:
    """CPU ceilings at each thread count: GEMM per dtype (``n``; bf16 at n/2, slower where the CPU has no bf16
    units), DRAM copy (buffers of 4× the last-level cache, ≥ 64 MiB) and an L2-resident copy (half of one core's L2
    per thread). Rows as :func:`measure` documents them. Raises :class:`UsageError` for a thread count < 1."""
    torch = _torch()
    if not threads or min(threads) < 1:
        raise UsageError(f"--threads {threads}: thread counts must be ≥ 1")
    caches, cpu, host = cpu_caches(), cpu_model(), platform.node() or "unknown"
    dram = max(4 * caches.get("L3", caches.get("L2", 8 << 20)), 64 << 20)
    before = torch.get_num_threads()
    rows: list[dict[str, Any]] = []
    keys = {t: f"{host} | {cpu} | {t} threads" for t in threads}
    jobs: list[tuple[int, Callable[[], dict[str, Any] | None]]] = []
    for dtype in dtypes:  # each measurement at every thread count in turn: a busy machine slows all alike
        size = n // 2 if dtype == "bf16" else n
        jobs += [
            (t, functools.partial(best_gemm_row, torch, dtype, size, keys[t], threads=t)) for t in threads
        ]
    for t in threads:
        l2 = caches.get("L2", 256 << 10) // 4 * t  # src + dst = half of each core's L2
        jobs.append((t, functools.partial(copy_row, torch, "DRAM", dram, keys[t], "DRAM-sized", threads=t)))
        jobs.append((t, functools.partial(copy_row, torch, "L2", l2, keys[t], "L2-resident", threads=t)))
    try:
        for t, job in jobs:
            torch.set_num_threads(t)
            row = job()
            rows += [row] if row else []
    finally:
        torch.set_num_threads(before)
    return rows


def gpu_unavailable_reason() -> str | None:
    """Why the GPU path cannot run here (no torch, a CPU build, no device), or None when it can."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return (
            f"no CUDA device visible to torch {torch.__version__} (torch.version.cuda = {torch.version.cuda})"
        )
    return None


def _fp8_row(torch: Any, n: int, key: str) -> dict[str, Any] | None:
    """fp8 (e4m3) GEMM through ``torch._scaled_mm`` where the GPU has fp8 tensor cores (CC ≥ 8.9)."""
    if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "float8_e4m3fn"):
        return None
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    try:
        t, reps = best_time(
            lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            sync=torch.cuda.synchronize,
        )
    except RuntimeError:
        return None
    method = GEMM_FORMULA.format(reps=reps, dtype="fp8 e4m3 (torch._scaled_mm)", n=n)
    return _row(
        "TENSOR FP8",
        "compute",
        2.0 * n**3 / t,
        key,
        method,
        f"torch._scaled_mm fp8 n={n}",
        {"n": n, "best_s": t},
    )


def launch_overhead_row(torch: Any, key: str, launches: int = 2000) -> dict[str, Any]:
    """t_o: wall time of ``launches`` back-to-back one-element ``add_`` kernels / launches (best of the budget)."""
    x = torch.zeros(1, device="cuda")

    def burst() -> None:
        for _ in range(launches):
            x.add_(1.0)

    t, reps = best_time(burst, sync=torch.cuda.synchronize)
    method = f"best of {reps}: wall time of {launches} back-to-back one-element add_ launches / {launches}, one synchronize"
    return _row("LAUNCH", "latency", t / launches, key, method, "add_ 1 element", {"launches": launches})


def measure_gpu(dtypes: tuple[str, ...] = GPU_DTYPES, n: int = 8192) -> list[dict[str, Any]]:
    """GPU ceilings of device 0 (see the module docstring). Raises :class:`ToolMissingError` with the reason when
    there is no usable GPU (:func:`gpu_unavailable_reason`)."""
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise ToolMissingError(f"cannot measure GPU ceilings: {reason}")
    torch = _torch()
    props = torch.cuda.get_device_properties(0)
    key = f"{props.name} | {props.major}.{props.minor} | measured"
    rows: list[dict[str, Any]] = []
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for dtype in dtypes:
            ceiling = gpu_ceiling(dtype, (props.major, props.minor), props.name)
            if ceiling is None:
                continue
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            size = n // 2 if dtype == "fp64" else n
            row = (
                _fp8_row(torch, size, key)
                if dtype == "fp8"
                else gemm_row(torch, dtype, size, key, device="cuda", ceiling=ceiling)
            )
            rows += [row] if row else []
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    rows.append(copy_row(torch, "DRAM", 1 << 30, key, "device-to-device, 1 GiB", device="cuda"))
    l2 = getattr(props, "L2_cache_size", 0) or (40 << 20)
    rows.append(graph_copy_row(torch, "L2", l2 // 4, key, "L2-resident"))
    rows.append(launch_overhead_row(torch, key))
    return rows


def measure(
    device: str = "cpu", threads: list[int] | tuple[int, ...] = (1, 2), argv: list[str] | None = None
) -> dict[str, Any]:
    """The measured-ceilings document of this machine: ``{"rooflake_measured_ceilings": 1, "measured_at": ISO-8601
    UTC, "device": cpu|cuda, "host", "cpu", "caches": {level: bytes}, "torch", "gpu" (torch's name of device 0;
    None on a CPU), "command_line", "ceilings": [row]}``, each row ``{ceiling (CPU: FP64, FP32, BF16; GPU: the
    names :func:`gpu_ceiling` gives; DRAM, L2, LAUNCH), kind (compute | bandwidth | latency), value (FLOP/s,
    byte/s or s), unit, machine_key, method (how it was measured: the formula), source_name, details (threads,
    sizes, best time in s)}``. Raises :class:`UsageError` for an unknown device and
    :class:`ToolMissingError` (no torch; ``cuda`` without a usable GPU, with the reason)."""
    if device not in ("cpu", "cuda"):
        raise UsageError(f"--device {device!r}: cpu or cuda")
    torch = _torch()
    rows = measure_cpu(threads) if device == "cpu" else measure_gpu()
    return {
        FORMAT_KEY: FORMAT_VERSION,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "host": platform.node() or "unknown",
        "cpu": cpu_model(),
        "caches": cpu_caches(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "command_line": " ".join(argv) if argv else None,
        "ceilings": rows,
    }


def write(doc: dict[str, Any], path: str | Path) -> Path:
    """Write a :func:`measure` document as JSON; returns the path."""
    path = Path(path)
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path
