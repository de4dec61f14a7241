"""Serving steps: the one range per engine step that LLM servers write, its name carrying the batch makeup.

The grammars read (each a pure function of the range's name, :func:`parse_step`):

- **vLLM** ``execute_context_<C>(<c_tokens>[_<c_sqsq>])_generation_<G>(<g_tokens>[_<g_sqsq>])``: C context
  (prefill) requests with c_tokens query tokens, G generation (decode) requests; the optional second number of a
  group is its Σ N_Q² (``execute_context_1(888_788544)_generation_0(0)``).
- **vLLM roofline annotations** ``execute_<N>_context_<C>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<G>(sq..sk..sqsq..sqsk..)``:
  per group Σ N_Q (``sq``), Σ N_KV (``sk``), Σ N_Q² (``sqsq``), Σ N_Q·N_KV (``sqsk``); N = the step's tokens.
- **SGLang** ``step[EXTEND|DECODE|MIXED bs=<n> toks=<t> c=<C> g=<G> c_sq=.. c_sk=.. c_sqsq=.. c_sqsk=.. g_sq=..]``
  (the ``c_*``/``g_*`` roofline fields optional).
- **ATOM** ``prefill[bs=<n> tok=<t> ctx=[..] sqsq=.. sqsk=.. sk=..]``, ``decode[bs=<n>[/<padded>] tok=<t> p=<P> d=<D> ..]``.

A range whose name starts like a step (``execute_…context``, ``step[``, ``prefill[``, ``decode[``) but matches none
of them is a step of format ``unknown``: kept with its time, its counts NULL, and named in one ingest summary line.
Where step ranges nest (SGLang writes ``execute_…`` around ``step[…]``), the one with the most detail is kept.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

_N = r"(\d+)"
VLLM = re.compile(rf"^execute_context_{_N}\({_N}(?:_{_N})?\)_generation_{_N}\({_N}(?:_{_N})?\)$")
_GROUP = rf"\(sq{_N}sk{_N}sqsq{_N}sqsk{_N}\)"
VLLM_DETAILED = re.compile(rf"^execute_{_N}_context_{_N}{_GROUP}_generation_{_N}{_GROUP}$")
SGLANG = re.compile(r"^step\[(EXTEND|DECODE|MIXED)((?:\s+[a-z_]+=[^\s\]]+)*)\s*\]$")
ATOM = re.compile(r"^(prefill|decode)\[(.*)\]$")
CANDIDATE = re.compile(r"^(?:execute_\w*context|execute_diffusion|step\[|prefill\[|decode\[)")
_KEY = re.compile(r"([a-z_]+)=(\[[^\]]*\](?:\.\.\.\+\d+)?|[^\s\]]+)")
#: formats, most detail first (the one kept where step ranges nest)
DETAIL = ("vllm-roofline", "sglang-roofline", "atom-roofline", "vllm", "sglang", "atom", "unknown")


@dataclass(frozen=True)
class Step:
    """The batch makeup a step's name carries (None: the name does not say). ``format``: one of :data:`DETAIL`;
    ``phase``: prefill | decode | mixed (None: no request, or not said); tokens are query tokens (Σ N_Q) and
    ``context_tokens`` the KV tokens attended to (Σ N_KV); ``sum_q_sq`` Σ N_Q², ``sum_q_kv`` Σ N_Q·N_KV."""

    format: str
    phase: str | None = None
    prefill_requests: int | None = None
    prefill_tokens: int | None = None
    decode_requests: int | None = None
    decode_tokens: int | None = None
    context_tokens: int | None = None
    sum_q_sq: int | None = None
    sum_q_kv: int | None = None


def _phase(prefill: int | None, decode: int | None) -> str | None:
    """prefill | decode | mixed from the request counts (None when neither is known or both are 0)."""
    p, d = prefill or 0, decode or 0
    if p and d:
        return "mixed"
    return "prefill" if p else "decode" if d else None


def _add(*vs: int | None) -> int | None:
    """Sum of the known values; None when none is known."""
    known = [v for v in vs if v is not None]
    return sum(known) if known else None


def _vllm(name: str) -> Step | None:
    if m := VLLM_DETAILED.match(name):
        _, c, csq, csk, csqsq, csqsk, g, gsq, gsk, gsqsq, gsqsk = map(int, m.groups())
        return Step("vllm-roofline", _phase(c, g), c, csq, g, gsq, csk + gsk, csqsq + gsqsq, csqsk + gsqsk)
    if m := VLLM.match(name):
        n = [int(v) if v is not None else None for v in m.groups()]
        return Step("vllm", _phase(n[0], n[3]), n[0], n[1], n[3], n[4], None, _add(n[2], n[5]))
    return None


def _fields(body: str) -> dict[str, str]:
    return {k: v for k, v in _KEY.findall(body)}


def _int(v: str | None) -> int | None:
    """The first integer of a field (``117/128`` -> 117: the real batch, before CUDA-graph padding)."""
    m = re.match(r"\d+", v) if v is not None else None
    return int(m.group()) if m else None


def _sglang(name: str) -> Step | None:
    m = SGLANG.match(name)
    if not m:
        return None
    mode, f = m.group(1), _fields(m.group(2))
    get = lambda k: _int(f.get(k))  # noqa: E731
    bs, roofline = get("bs"), any(k.endswith("sqsq") for k in f)
    p: int | None
    ptok: int | None
    d: int | None
    dtok: int | None
    if mode == "EXTEND":
        p, ptok, d, dtok = get("c") or bs, get("c_sq") or get("toks"), 0, 0
    elif mode == "DECODE":
        p, ptok, d, dtok = 0, 0, get("g") or bs, get("g_sq") or bs
    else:
        p, ptok, d, dtok = get("c"), get("c_sq"), get("g"), get("g_sq")
    ctx = _add(get("c_sk"), get("g_sk"))
    phase = "mixed" if mode == "MIXED" else _phase(p, d)
    fmt = "sglang-roofline" if roofline else "sglang"
    return Step(
        fmt,
        phase,
        p,
        ptok,
        d,
        dtok,
        ctx,
        _add(get("c_sqsq"), get("g_sqsq")),
        _add(get("c_sqsk"), get("g_sqsk")),
    )


def _atom(name: str) -> Step | None:
    m = ATOM.match(name)
    if not m:
        return None
    kind, f = m.group(1), _fields(m.group(2))
    get = lambda k: _int(f.get(k))  # noqa: E731
    if "bs" not in f:
        return None
    bs, tok = get("bs"), get("tok")
    p: int | None
    ptok: int | None
    d: int | None
    dtok: int | None
    if kind == "prefill":
        p, ptok, d, dtok = bs, tok, 0, 0
    elif "p" in f:
        p, d = get("p"), get("d")
        ptok, dtok = None, None
    else:
        p, ptok, d, dtok = 0, 0, get("d") or bs, tok
    fmt = "atom-roofline" if "sqsq" in f else "atom"
    return Step(fmt, _phase(p, d), p, ptok, d, dtok, get("sk"), get("sqsq"), get("sqsk"))


def parse_step(name: str) -> Step | None:
    """The :class:`Step` a range's ``name`` describes, format ``unknown`` (counts None) for a name that starts like
    a step but matches no grammar of the module docstring; None for a name that is no step."""
    if not CANDIDATE.match(name):
        return None
    return _vllm(name) or _sglang(name) or _atom(name) or Step("unknown")


def step_rows(ranges: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``serving_steps`` rows (without run_id) of ``ranges`` (rows of the ``ranges`` table: range_id, name,
    start_ns, end_ns, thread), in start order, and the ingest summary's lines (one naming the unknown formats).
    Of step ranges nested on one thread the one of most detail (:data:`DETAIL`; then the outer) is kept."""
    found = [(r, s) for r in ranges if r.get("name") and (s := parse_step(r["name"])) is not None]
    found.sort(key=lambda rs: (rs[0]["start_ns"] is None, rs[0]["start_ns"] or 0, -(rs[0]["end_ns"] or 0)))
    kept: list[tuple[dict[str, Any], Step]] = []
    for r, s in found:
        outer = next((i for i, (o, _) in enumerate(kept) if _inside(r, o)), None)
        if outer is None:
            kept.append((r, s))
        elif DETAIL.index(s.format) < DETAIL.index(kept[outer][1].format):
            kept[outer] = (kept[outer][0], s)  # the outer range's time, the inner one's detail
    rows = [
        {"step_id": i, "range_id": r["range_id"], "name": r["name"], **asdict(s), "start_ns": r["start_ns"],
         "end_ns": r["end_ns"], "thread": r.get("thread")}
        for i, (r, s) in enumerate(kept)
    ]  # fmt: skip
    return rows, _summary(rows)


def _inside(r: dict[str, Any], o: dict[str, Any]) -> bool:
    """Range ``r`` lies within range ``o`` on the same thread."""
    if None in (r["start_ns"], r["end_ns"], o["start_ns"], o["end_ns"]) or r.get("thread") != o.get("thread"):
        return False
    return bool(o["start_ns"] <= r["start_ns"] and r["end_ns"] <= o["end_ns"])


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    unknown = [r["name"] for r in rows if r["format"] == "unknown"]
    if not unknown:
        return []
    shown = ", ".join(repr(n[:60]) for n in sorted(set(unknown))[:3])
    return [
        f"{len(unknown)} of {len(rows)} serving steps of an unknown format ({shown}): kept with their time, their "
        "batch counts NULL"
    ]


def step_table(ranges: Any, run_id: str) -> tuple[Any, list[str]]:
    """The ``serving_steps`` table (pa.Table, :data:`rooflake.schema.SERVING_STEPS`) of a ``ranges`` pa.Table and the
    ingest summary's lines (:func:`step_rows`)."""
    import pyarrow as pa

    from rooflake.schema import SERVING_STEPS

    cols = [c for c in ("range_id", "name", "start_ns", "end_ns", "thread") if c in ranges.column_names]
    names = ranges.column("name")
    import pyarrow.compute as pc

    mask = pc.match_substring_regex(names, CANDIDATE.pattern)
    rows, lines = step_rows(ranges.filter(pc.fill_null(mask, False)).select(cols).to_pylist())
    return pa.Table.from_pylist([{**r, "run_id": run_id} for r in rows], schema=SERVING_STEPS), lines
