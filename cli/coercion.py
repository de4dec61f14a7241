"""Lazy argument coercion for ``rl``: a value typer would hand back unchanged skips typer's pydantic adapter.

typer (0.29, installed here) coerces every parameter's value through a pydantic ``TypeAdapter`` built on first use
(``typer._coercion.build_runtime_param``), even a default that is already of its type: the first one imports
pydantic and builds its schemas, ~0.06-0.1 s of the ~0.3 s of ``rl sql "select 1"`` or ``rl runs`` (the goal:
<= 0.35 s), for a ``str`` handed back as it came. :func:`install` makes each parameter's coercion lazy: a value that
is already what typer would give, or plain decimal digits for an ``int`` (:func:`given`), is returned as typer would
return it; a path's text is made a ``Path`` (as pydantic makes it) and checked by typer's own path checks; a choice's
text or member is matched by typer's own function; any other value goes through the adapter typer builds (its own checks and
error messages, unchanged). The typer coercion in force is checked against this one, parameter by parameter and
value by value, for every command (``tests/test_cli_coercion.py``).

The seam. This is the one place rooflake reaches into typer's internals: :data:`TYPER_INTERNALS` names each one
:func:`install` relies on, :func:`internals` resolves them, and ``tests/test_seams.py`` holds the installed typer
to them (each name present, ``RuntimeParam`` a dataclass with ``parameter_info`` and ``annotation``, the signatures
called here), so a typer that moves them fails that test by name rather than slowing ``rl`` down silently. With
another typer (no ``typer._coercion``, or a different shape of it) :func:`install` changes nothing: typer's own
coercion runs, and only the ~0.06-0.1 s is lost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from enum import Enum
from pathlib import Path
from typing import Any


def given(annotation: Any, info: Any, value: Any) -> tuple[bool, Any]:
    """(True, what typer's coercion gives for ``value``) where that needs no adapter: a ``str`` for a ``str``
    parameter, a ``bool`` for a ``bool`` one, an ``int`` (a
    default, or plain decimal digits: :data:`_DIGITS`) or a ``float`` (a default) for one of that type within its
    ``min``/``max``, a list or tuple of ``str`` for a ``list[str]`` one (as a list); else (False, None). ``info``:
    the parameter's typer ``ParameterInfo``; never with a custom ``parser``."""
    if info.parser is not None:
        return False, None
    if annotation is int and type(value) is str and _DIGITS.fullmatch(value):
        value = int(value)  # plain decimal digits: the int pydantic makes of them
    if annotation in (int, float) and type(value) is annotation:
        low, high = info.min, info.max
        return (
            (True, value)
            if (low is None or value >= low) and (high is None or value <= high)
            else (False, None)
        )
    if annotation is str and type(value) is str:
        return True, value
    if annotation is bool and type(value) is bool:
        return True, value
    if annotation == list[str] and isinstance(value, list | tuple) and all(type(v) is str for v in value):
        return True, list(value)
    return False, None


# the texts of an int parameter taken without pydantic: decimal digits, no sign, no leading zero, no separators (any
# other text, "+3", "007", "1_000", " 3", goes through typer's adapter, whatever it makes of it)
_DIGITS = re.compile(r"0|[1-9][0-9]{0,17}")


#: typer's internals :func:`install` relies on: module -> the names it takes from it (``tests/test_seams.py`` checks
#: each against the installed typer). Those of ``typer._param_types`` are optional: without one, the values it
#: would take go through typer's adapter.
TYPER_INTERNALS: dict[str, tuple[str, ...]] = {
    "typer.core": ("_TyperParameter",),
    "typer._coercion": ("RuntimeParam", "build_runtime_param"),
    "typer._param_types": ("coerce_cli_path", "coerce_cli_choice", "choice_coercion_annotation"),
}


def internals() -> dict[str, Any] | None:
    """Each name of :data:`TYPER_INTERNALS` -> what the installed typer has under it (None where it has nothing);
    None when typer lacks one of those modules."""
    import importlib

    out: dict[str, Any] = {}
    for module, names in TYPER_INTERNALS.items():
        try:
            found = importlib.import_module(module)
        except ImportError:
            return None
        out.update({n: getattr(found, n, None) for n in names})
    return out


def install() -> None:
    """Make typer's per-parameter coercion lazy (the module docstring); once, and only where typer has the
    coercion this was written against (:func:`internals`)."""
    found = internals()
    if found is None:
        return
    param = found["_TyperParameter"]
    base = found["RuntimeParam"]
    build: Any = found["build_runtime_param"]
    path: Any = found["coerce_cli_path"]
    choice: Any = found["coerce_cli_choice"]
    choices: Any = found["choice_coercion_annotation"]
    if param is None or base is None or build is None or getattr(param, "_rooflake_lazy", False):
        return
    if not dataclasses.is_dataclass(base) or not hasattr(param, "get_runtime_param"):
        return

    @dataclasses.dataclass(frozen=True)
    class Lazy(base):  # type: ignore[misc, valid-type]
        """typer's coercion of one parameter, its adapter built only for a value :func:`given` does not take."""

        descriptor: Any = None
        built: list[Any] = dataclasses.field(default_factory=list)  # typer's own RuntimeParam, once built

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            done, out = given(self.annotation, info, value)
            if done:
                return out
            if path is not None and self.annotation is Path and info.path_type is None and type(value) is str:
                # typer's own path checks and messages, given the Path pydantic would make of the text
                return path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            spec = choices(self.annotation, info) if choice is not None and choices is not None else None
            if spec is not None and isinstance(value, str | Enum):
                # typer's own match of a choice (a member, its text; a text that matches none: typer's adapter
                # says so)
                with contextlib.suppress(ValueError):
                    return choice(value, choices=spec[0], case_sensitive=spec[1], ctx=ctx)
            if not self.built:
                self.built.append(build(self.descriptor))
            return self.built[0]._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            d = self.type_descriptor
            if d.file_annotation is not None:  # files are opened by typer's own (FileRuntimeParam)
                self._runtime_param = build(d)
            else:
                self._runtime_param = Lazy(
                    parameter_info=d.parameter_info, annotation=d.annotation, descriptor=d
                )
        return self._runtime_param

    param.get_runtime_param = get_runtime_param
    param._rooflake_lazy = True
