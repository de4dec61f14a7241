"""``rooflake.cli.coercion``: the lazy coercion gives what typer's own gives, for every parameter of every ``rl``
command and every kind of value, and spares ``rl sql``/``rl runs`` the pydantic import (issue 14)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer.main

from rooflake.cli import app, coercion

_coercion = pytest.importorskip("typer._coercion")


def _params() -> list[tuple[str, Any]]:
    """(command name, parameter) for every typer parameter of every command and sub-command."""
    out: list[tuple[str, Any]] = []

    def walk(name: str, cmd: Any) -> None:
        out.extend((name, p) for p in cmd.params if hasattr(p, "type_descriptor"))
        for sub, c in getattr(cmd, "commands", {}).items():
            walk(f"{name} {sub}".strip(), c)

    walk("", typer.main.get_command(app))
    return out


PARAMS = _params()


def _values(param: Any, tmp: Path) -> list[Any]:
    """Values this parameter may be given: its default, texts as typed, and what its type admits (paths that exist
    as a file or a folder, or not; numbers at and past the ends of its range)."""
    d = param.type_descriptor
    out: list[Any] = [
        "x",
        "a b",
        "",
        "-",
        "3",
        "1.5",
        "yes",
        "no",
        "1",
        "0",
        "nope",
        "é",
        ["a", "b"],
        ("a",),
        [],
    ]
    if param.default is not None and not callable(param.default):
        out.append(param.default)
    if isinstance(d.annotation, type) and issubclass(d.annotation, Enum):
        texts = [str(m.value) for m in d.annotation] + [m.name for m in d.annotation]
        out += [*d.annotation, *texts, *(t.upper() for t in texts), *(f" {t}" for t in texts)]
    out += [
        True,
        False,
        0,
        7,
        2.5,
        -1,
        float("nan"),
        10**9,
        "42",
        "007",
        "+3",
        "-3",
        " 3",
        "1_000",
        "٣",
        "1e3",
    ]
    out += ["9" * 18, "9" * 19, "00"]
    out += [str(tmp / "file.txt"), str(tmp), str(tmp / "missing" / "x.png"), "./rel/x.html", Path("x.png")]
    for end in (d.parameter_info.min, d.parameter_info.max):
        if end is not None:
            out += [end, end - 1, end + 1, float(end), str(end)]
    return out


def _outcome(runtime: Any, param: Any, ctx: Any, value: Any) -> tuple[str, Any]:
    """("ok", (value, type)) or ("error", (class, message)) of one coercion."""
    try:
        got = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as e:  # noqa: BLE001 - the class and message are compared
        return "error", (type(e).__name__, str(getattr(e, "message", e)))
    return "ok", (got, type(got))


@pytest.mark.parametrize(("command", "param"), PARAMS, ids=[f"{c}:{p.name}" for c, p in PARAMS])
def test_lazy_coercion_gives_what_typers_own_gives(command: str, param: Any, tmp_path: Path) -> None:
    """Same value (and type), or the same error and message, as ``typer._coercion.build_runtime_param``."""
    import click

    (tmp_path / "file.txt").write_text("x")
    ctx = click.Context(typer.main.get_command(app))
    ours = param.get_runtime_param()
    theirs = _coercion.build_runtime_param(param.type_descriptor)
    checked = 0
    for value in _values(param, tmp_path):
        if isinstance(value, (list, tuple)) and not (param.multiple or param.nargs == -1):
            continue  # click hands a single-valued parameter one value
        assert _outcome(ours, param, ctx, value) == _outcome(theirs, param, ctx, value), (command, value)
        checked += 1
    assert checked >= 5


def test_install_changed_every_parameter_but_files() -> None:
    """:func:`coercion.install` is in force for ``rl``'s parameters (not only present)."""
    lazy = [p for _, p in PARAMS if type(p.get_runtime_param()).__name__ == "Lazy"]
    assert len(lazy) >= 0.9 * len(PARAMS) and len(PARAMS) > 50, (len(lazy), len(PARAMS))


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (str, "x", (True, "x")),
        (str, 3, (False, None)),
        (bool, True, (True, True)),
        (bool, "true", (False, None)),
        (list[str], ("a", "b"), (True, ["a", "b"])),
        (list[str], ["a", 1], (False, None)),
        (Path, "p", (False, None)),
        (int, "3", (True, 3)),
        (int, "03", (False, None)),
    ],
)
def test_given_takes_only_values_typer_hands_back(
    annotation: Any, value: Any, expected: tuple[bool, Any]
) -> None:
    from typer.models import OptionInfo

    assert coercion.given(annotation, OptionInfo(), value) == expected
    # a custom parser always runs
    assert coercion.given(annotation, OptionInfo(parser=str.upper), value) == (False, None)


def test_given_takes_a_number_only_within_its_range() -> None:
    from typer.models import OptionInfo

    assert coercion.given(int, OptionInfo(min=1), 1) == (True, 1)
    assert coercion.given(int, OptionInfo(min=1), 0) == (False, None)  # typer's adapter says why
    assert coercion.given(int, OptionInfo(min=1), "2") == (True, 2)  # plain digits
    assert coercion.given(int, OptionInfo(min=1), "0") == (False, None)
    assert coercion.given(int, OptionInfo(), "+2") == (False, None)  # any other text: typer converts it
    assert coercion.given(float, OptionInfo(max=1.0), float("nan")) == (False, None)
    assert coercion.given(int, OptionInfo(), True) == (False, None)  # a bool is no int here


def test_a_bad_choice_is_still_typers_error(tmp_path: Path) -> None:
    """A value the lazy path does not take goes through typer's adapter: its message, exit 2."""
    from typer.testing import CliRunner

    (tmp_path / "s").mkdir()
    r = CliRunner().invoke(app, ["sql", "select 1", "-f", "nope", "--store", str(tmp_path / "s")])
    assert (
        r.exit_code == 2
        and "Invalid value for '--format' / '-f'" in r.stderr
        and "'nope' is not one of" in r.stderr
    ), r.output
