"""vl-convert in worker processes: PNG and SVG of Vega-Lite specs rendered on every core, the JavaScript engine
warmed up while the caller still queries and builds its charts.

vl-convert holds the GIL while it converts, and its first conversion in a process starts a JavaScript engine
(about 0.5 s of CPU, holding the GIL for much of it: Python imports beside it took 0.35 s instead of 0.07 s,
measured with vl-convert 1.9); the conversions themselves take 0.05-0.3 s. So a thread cannot
overlap conversions with anything, and a report that renders its charts one after another pays every one in
turn; a command drawing one chart warms the engine on a thread (:func:`start_for`) and converts in its own
process. :func:`start` launches ``workers``
processes (``spawn``: a JavaScript engine must not be forked): half of them renderers, each warming its engine at
once, the others PNG processes, which draw a chart's PNG from the SVG a renderer laid out (resvg needs no
JavaScript engine, and a report's PNGs take as long as its SVGs: with two cores, one engine started instead of two
saved ~0.5 s of CPU, and ``rl report`` of 10 runs took 2.13 s instead of 2.46). :func:`render` queues one chart
(the spec as JSON text, the files to write), :func:`submit` any function, :func:`wait` waits for a list of them,
raising the first error (an :class:`rooflake.schema.OutputError` naming the file, as :mod:`rooflake.render.files`
raises it). :func:`lay_out` starts a chart's SVG before its files are known (``rl report`` lays out its charts
while it still reads the report's tables); :func:`render` of the same spec then writes what was laid out. Without
:func:`start`, :func:`render` and :func:`submit` run in the calling process, and :func:`lay_out` does nothing. The
processes are spawned: a script that starts them needs the ``if __name__ == "__main__":`` guard (the ``rl`` command
has it), so the library never starts them on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rooflake.render.formats import NOT_XML, char_escape

__all__ = [
    "bundle_cache",
    "javascript_bundle",
    "lay_out",
    "png_files",
    "render",
    "render_files",
    "start",
    "start_for",
    "start_once",
    "stop",
    "submit",
    "svg_files",
    "wait",
    "warm_here",
]

_WARM_SPEC = '{"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": {"field": "a", "type": "quantitative"}}}'

# an SVG with text: a PNG process's first conversion loads the system fonts
_WARM_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><text y="8">a</text></svg>'

_pool: ProcessPoolExecutor | None = None  # renderers: vl-convert's JavaScript engine (SVG, and what needs it)
_png_pool: ProcessPoolExecutor | None = None  # PNG of an SVG laid out (resvg: no JavaScript engine)


def _warm() -> None:
    """Renderer initializer: start vl-convert's JavaScript engine now (its first conversion)."""
    import vl_convert as vlc

    vlc.vegalite_to_svg(_WARM_SPEC)


def _warm_png() -> None:
    """PNG process initializer: import vl-convert and load the fonts (its first conversion)."""
    import vl_convert as vlc

    vlc.svg_to_png(_WARM_SVG)


def render_files(spec_json: str, outputs: list[tuple[str, str, float]]) -> None:
    """Render ``spec_json`` (Vega-Lite, JSON text) into each ``(path, format, scale)`` of ``outputs`` (format
    ``png`` or ``svg``), each file written by the rule of :mod:`rooflake.render.files`. Raises
    :class:`rooflake.schema.OutputError` when a file cannot be written."""
    import vl_convert as vlc

    from rooflake.render.files import write_file

    if any(fmt == "svg" for _, fmt, _ in outputs):
        svg = svg_files(spec_json, [o for o in outputs if o[1] == "svg"])
        png_files(svg, [o for o in outputs if o[1] == "png"])
        return
    spec_json = xml_safe(spec_json)
    for path, _fmt, scale in outputs:
        write_file(Path(path), vlc.vegalite_to_png(spec_json, scale=scale))


def svg_files(spec_json: str, outputs: list[tuple[str, str, float]]) -> str:
    """The SVG of ``spec_json`` (Vega-Lite, JSON text; laid out by vl-convert's JavaScript engine), written into
    the path of each of ``outputs`` (SVG ones); returned for :func:`png_files`. Raises as :func:`render_files`."""
    import vl_convert as vlc

    svg: str = vlc.vegalite_to_svg(xml_safe(spec_json))
    _write_svg(svg, outputs)
    return svg


def _write_svg(svg: str, outputs: list[tuple[str, str, float]]) -> None:
    """Write ``svg`` into the path of each SVG of ``outputs`` (:mod:`rooflake.render.files`' rule)."""
    from rooflake.render.files import write_file

    for path, _fmt, _scale in (o for o in outputs if o[1] == "svg"):
        write_file(Path(path), svg.encode("utf-8"))


def laid_out_files(svg: str, outputs: list[tuple[str, str, float]]) -> None:
    """Write ``svg`` (laid out by :func:`svg_files` without outputs) into each SVG of ``outputs``, and its PNG
    into each PNG (:func:`png_files`). Raises as :func:`render_files`."""
    _write_svg(svg, outputs)
    png_files(svg, [o for o in outputs if o[1] == "png"])


def png_files(svg: str, outputs: list[tuple[str, str, float]]) -> None:
    """The PNG of ``svg`` (vl-convert's resvg: no JavaScript engine) at each ``(path, "png", scale)`` of
    ``outputs``: the PNG of the SVG already laid out (``vegalite_to_png`` would lay it out again). Raises as
    :func:`render_files`."""
    import vl_convert as vlc

    from rooflake.render.files import write_file

    for path, _fmt, scale in outputs:
        write_file(Path(path), vlc.svg_to_png(svg, scale=scale))


# what XML 1.0 cannot hold (C0 controls but TAB, LF and CR; U+FFFE, U+FFFF; lone surrogates) as the spec's JSON text
# holds it: json.dumps escapes every C0 control, and with ensure_ascii every non-ASCII character, as \\uXXXX (a
# pattern starting with a literal: the search skips ahead, 3 ms on a 4 MB spec where an alternation took 48 ms); the
# non-ASCII ones may also come raw
_JSON_NOT_XML = re.compile(
    r"\\u(?:00(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])|[dD][89a-fA-F][0-9a-fA-F]{2}|[fF]{3}[eEfF])"
)
_RAW_NOT_XML = re.compile(r"[\ufffe\uffff\ud800-\udfff]")
_NOT_XML = re.compile(f"[{NOT_XML}]")


def xml_safe(spec_json: str) -> str:
    """``spec_json`` (Vega-Lite, JSON text) with every character XML 1.0 cannot hold, in any of its strings,
    written as its escape (``\\x1b``, ``\\ufffe``) as a terminal shows it (:func:`rooflake.cli.output.printable`):
    kernel names and NVTX text come from the profiled program, and vl-convert's SVG (and the PNG drawn from it)
    cannot carry such a character (vl-convert refuses the PNG, and writes an SVG that is not well-formed XML). A
    spec without one is returned as it is (a regular-expression search or two); astral characters written as
    surrogate pairs are kept."""
    if _JSON_NOT_XML.search(spec_json) is None and (
        spec_json.isascii() or _RAW_NOT_XML.search(spec_json) is None
    ):
        return spec_json
    return json.dumps(_xml_strings(json.loads(spec_json)), allow_nan=False)


def _xml_strings(v: Any) -> Any:
    """``v`` (decoded JSON) with :data:`_NOT_XML` characters escaped in every string, keys included."""
    if isinstance(v, str):
        return _NOT_XML.sub(char_escape, v)
    if isinstance(v, list):
        return [_xml_strings(x) for x in v]
    if isinstance(v, dict):
        return {_xml_strings(k): _xml_strings(x) for k, x in v.items()}
    return v


def bundle_cache() -> Path:
    """Where :func:`javascript_bundle` keeps the bundle: ``$RL_CACHE_DIR``, else ``$XDG_CACHE_HOME/rooflake``, else
    ``~/.cache/rooflake``."""
    if os.environ.get("RL_CACHE_DIR"):
        return Path(os.environ["RL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rooflake"


def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (vl-convert's bundle: no network).

    vl-convert builds the bundle on each first call in a process (1.3 s of CPU): it is kept in
    :func:`bundle_cache` under a name with vl-convert's version (the bundle depends on nothing else), written
    atomically by the rule of :mod:`rooflake.render.files`; a cache that cannot be read or written is skipped."""
    import vl_convert as vlc

    from rooflake.render.files import write_file
    from rooflake.schema import OutputError

    version = getattr(vlc, "__version__", None)
    if not version:  # not in the module of some builds: the installed distribution's
        from importlib.metadata import version as installed

        version = installed("vl-convert-python")
    path = bundle_cache() / f"vl-convert-{version}-javascript-bundle.js"
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    bundle: str = vlc.javascript_bundle()  # type: ignore[call-arg]  # the stub marks the optional snippet required
    with contextlib.suppress(OutputError):  # no cache: the next report builds it again
        write_file(path, bundle.encode("utf-8"))
    return bundle


def start(workers: int | None = None) -> None:
    """Start ``workers`` processes (default: one per core): half of them (at least one) renderers, each warming
    its JavaScript engine at once, the others PNG processes (:func:`render`: a chart's PNG is drawn from its SVG
    there, while the renderers lay out the next charts; they need no JavaScript engine, whose start costs each
    renderer ~0.5 s of CPU). A second call keeps the running ones."""
    global _pool, _png_pool
    if _pool is not None:
        return
    import multiprocessing

    n = max(1, workers or os.cpu_count() or 1)
    spawn = multiprocessing.get_context("spawn")
    renderers = (n + 1) // 2
    _sizes[:] = [renderers, max(1, n - renderers)]
    _pool = ProcessPoolExecutor(renderers, mp_context=spawn, initializer=_warm)
    if n > renderers:
        _png_pool = ProcessPoolExecutor(n - renderers, mp_context=spawn, initializer=_warm_png)
    for pool, k in ((_pool, renderers), (_png_pool, n - renderers)):
        for _ in range(k):  # every process starts (and warms up) now, not at the first chart
            pool.submit(os.getpid)  # type: ignore[union-attr]


def start_for(path: str | os.PathLike[str]) -> None:
    """Warm up vl-convert's JavaScript engine in this process when ``path`` is a PNG or SVG file, on a thread, while
    the caller imports, queries the store and builds the chart (a command drawing one chart calls this first).

    One chart renders here, not in a renderer process: a spawned process costs an interpreter and its imports
    (``rl roofline -o x.png`` took 0.2 s more CPU that way). The warm-up holds the GIL for much of its time, so
    it overlaps only the caller's waits outside Python (DuckDB queries): ``rl roofline --time`` gains from it
    (2.17 vs 2.26 s), the one-chart PNG path of :mod:`rooflake.render.rows` does not and skips it."""
    if Path(path).suffix.lower() in (".png", ".svg"):
        warm_here()


_warming: list[Any] = []


def warm_here() -> None:
    """Start vl-convert's JavaScript engine of this process on a daemon thread: its first conversion (about 0.5 s,
    much of it holding the GIL) overlaps the caller's waits outside Python; a later conversion waits for it inside vl-convert."""
    if not _warming:
        thread = threading.Thread(target=_warm, name="rl-vl-convert-warm-up", daemon=True)
        thread.start()
        _warming.append(thread)


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
    return _pool.submit(fn, *args)


_laid_out: dict[str, Future[str]] = {}  # spec JSON -> its SVG, laid out by lay_out() and not yet rendered


def lay_out(spec_json: str) -> None:
    """Start laying out the SVG of ``spec_json`` (Vega-Lite, JSON text) in a renderer now, before the files it
    goes into are known: :func:`render` of the same text later writes that SVG, and the PNG drawn from it, instead
    of laying it out again (an error laying it out reaches the caller there). Nothing without renderer and PNG
    processes (:func:`start` with two workers or more: the caller lays nothing out ahead of its own work), nor
    when that text is laid out already."""
    if _pool is None or _png_pool is None or spec_json in _laid_out:
        return
    _laid_out[spec_json] = _queued_submit(_pool, 0, svg_files, spec_json, [])


def render(spec_json: str, outputs: list[tuple[str, str, float]]) -> Future[None]:
    """:func:`render_files` of ``spec_json`` into ``outputs``, as :func:`submit` runs it; with PNG processes
    (:func:`start` with two workers or more) and both an SVG and a PNG asked, the SVG is laid out by a renderer
    (:func:`svg_files`) and the PNG drawn from it (:func:`png_files`) by a PNG process, or by a renderer when
    the PNG processes have more work queued than the renderers (the last charts' PNGs: drawing a PNG takes as
    long as laying out its SVG). A spec laid out already (:func:`lay_out`) is not laid out again: its SVG and
    PNG files are written from that SVG, by the pool with less work queued. The future is done when every file
    is written, or holds the first error; its callbacks run on a pool's management thread: one must not wait
    for another chart nor call :func:`stop`."""
    pools = (_pool, _png_pool)
    svgs = [o for o in outputs if o[1] == "svg"]
    pngs = [o for o in outputs if o[1] == "png"]
    laid_out = _laid_out.pop(spec_json, None)
    (rest, fn) = (outputs, laid_out_files)  # laid out ahead (lay_out): every file written from its SVG
    if laid_out is None:
        if pools[0] is None or pools[1] is None or not svgs or not pngs:
            return submit(render_files, spec_json, outputs)
        laid_out = _queued_submit(pools[0], 0, svg_files, spec_json, svgs)
        (rest, fn) = (pngs, png_files)
    done: Future[None] = Future()

    def then_png(svg: Future[str]) -> None:
        if svg.cancelled() or svg.exception() is not None:
            _settle(done, svg)
            return
        with _queued_lock:  # the pool with less work queued per process
            i = 1 if _queued[1] * _sizes[0] <= _queued[0] * _sizes[1] else 0
        try:
            drawn = _queued_submit(pools[i], i, fn, svg.result(), rest)  # type: ignore[arg-type]
        except BaseException as e:  # the processes were stopped meanwhile
            done.set_exception(e)
            return
        drawn.add_done_callback(lambda f: _settle(done, f))

    laid_out.add_done_callback(then_png)
    return done


_queued = [0, 0]  # work submitted by render() and not done yet: renderers, PNG processes
_sizes = [1, 1]  # processes of each (start() sets them)
_queued_lock = threading.Lock()


def _queued_submit(pool: ProcessPoolExecutor, i: int, fn: Any, *args: Any) -> Future[Any]:
    """``pool.submit(fn, *args)``, counted in ``_queued[i]`` until it is done."""

    def finished(_f: Future[Any]) -> None:
        with _queued_lock:
            _queued[i] -= 1

    with _queued_lock:
        _queued[i] += 1
    try:
        f = pool.submit(fn, *args)
    except BaseException:
        finished(Future())
        raise
    f.add_done_callback(finished)
    return f


def _settle(done: Future[None], f: Future[Any]) -> None:
    """Give ``done`` the outcome of ``f``: cancelled, its error, or done (nothing when ``done`` was cancelled)."""
    if done.done():
        return
    if f.cancelled():
        done.cancel()
        done.set_running_or_notify_cancel()  # wakes concurrent.futures.wait / as_completed on it
    elif (e := f.exception()) is not None:
        done.set_exception(e)
    else:
        done.set_result(None)


def wait(futures: list[Future[Any]]) -> None:
    """Wait for every one of ``futures`` (from :func:`submit` or :func:`render`); then raise the first error, if
    any."""
    errors = [e for f in futures if (e := f.exception()) is not None]
    if errors:
        raise errors[0]


def stop() -> None:
    """Stop the renderer and PNG processes (after :func:`wait`)."""
    global _pool, _png_pool
    _laid_out.clear()
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None
    if _png_pool is not None:
        _png_pool.shutdown(wait=True, cancel_futures=True)
        _png_pool = None
