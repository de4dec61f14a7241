"""vl-convert in worker processes: PNG and SVG of Vega-Lite specs rendered on every core, the JavaScript engine
warmed up while the caller still queries and builds its charts.

vl-convert holds the GIL while it converts, and its first conversion in a process starts a JavaScript engine
(about 1 s); the conversions themselves take 0.05-0.3 s. So a thread cannot overlap them with anything, and a
report that renders its charts one after another pays every one in turn. :func:`start` launches ``workers``
processes (``spawn``: a JavaScript engine must not be forked), each warming its engine at once; :func:`submit`
queues one chart (the spec as JSON text, the files to write), :func:`wait` collects them, raising the first error
(an :class:`rooflake.schema.OutputError` naming the file, as :mod:`rooflake.render.files` raises it).
Without :func:`start`, :func:`submit` renders in the calling process.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["javascript_bundle", "render_files", "start", "start_for", "start_once", "stop", "submit", "wait"]

_WARM_SPEC = '{"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": {"field": "a", "type": "quantitative"}}}'

_pool: ProcessPoolExecutor | None = None
_pending: list[Future[Any]] = []


def _warm() -> None:
    """Worker initializer: start vl-convert's JavaScript engine now (its first conversion)."""
    import vl_convert as vlc

    vlc.vegalite_to_svg(_WARM_SPEC)


def render_files(spec_json: str, outputs: list[tuple[str, str, float]]) -> None:
    """Render ``spec_json`` (Vega-Lite, JSON text) into each ``(path, format, scale)`` of ``outputs`` (format
    ``png`` or ``svg``), each file written by the rule of :mod:`rooflake.render.files`. Raises
    :class:`rooflake.schema.OutputError` when a file cannot be written."""
    import vl_convert as vlc

    from rooflake.render.files import write_file

    for path, fmt, scale in outputs:
        if fmt == "png":
            data: bytes = vlc.vegalite_to_png(spec_json, scale=scale)
        else:
            data = vlc.vegalite_to_svg(spec_json).encode("utf-8")
        write_file(Path(path), data)


def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (vl-convert's bundle: no network)."""
    import vl_convert as vlc

    bundle: str = vlc.javascript_bundle()  # type: ignore[call-arg]  # the stub marks the optional snippet required
    return bundle


def start(workers: int | None = None) -> None:
    """Start ``workers`` renderer processes (default: one per core), each warming its JavaScript engine at once.
    A second call keeps the running ones."""
    global _pool
    if _pool is not None:
        return
    import multiprocessing

    n = max(1, workers or os.cpu_count() or 1)
    _pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_warm)
    for _ in range(n):  # every process starts (and warms up) now, not at the first chart
        _pending.append(_pool.submit(os.getpid))


def start_for(path: str | os.PathLike[str]) -> None:
    """Start one renderer when ``path`` is a PNG or SVG file: its engine warms up while the caller queries the
    store and builds the chart (a command drawing one chart calls this first)."""
    if Path(path).suffix.lower() in (".png", ".svg"):
        start(1)


def start_once(workers: int | None = None) -> bool:
    """:func:`start` unless renderers run already; True when this call started them (the caller stops them)."""
    if _pool is not None:
        return False
    start(workers)
    return True


def submit(fn: Any, *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` (:func:`render_files`, :func:`javascript_bundle`) in a renderer process when
    :func:`start` was called, else here and now; :func:`wait` or the future gives its result."""
    if _pool is None:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # handed to the caller by result(), as a pool would
            done.set_exception(e)
        return done
    fut = _pool.submit(fn, *args)
    _pending.append(fut)
    return fut


def wait() -> None:
    """Wait for every submitted chart; raise the first error."""
    global _pending
    pending, _pending = _pending, []
    for fut in pending:
        fut.result()


def stop() -> None:
    """Stop the renderer processes (after :func:`wait`)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None
        _pending.clear()
