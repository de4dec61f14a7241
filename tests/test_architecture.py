"""The shape of the package, checked by walking its source (DESIGN.md §2 and §6, issue 9).

- Layers: a module imports only from its own layer or the layers below it
  (schema → ingest/store → pipeline/queries → views → render → cli; instrument sits on schema alone, and ingest
  may use its shape rules).
- No module imports another module's ``_private`` name.
- SQL lives in ``.sql`` files: no Python string literal outside the query runner holds an SQL statement
  (the check: an upper-case statement keyword at the start of the text — ``SELECT … FROM``, ``WITH … AS (``,
  ``CREATE``/``INSERT``/``COPY``/``ATTACH``/``PRAGMA``/``DROP``/``UPDATE``/``DELETE`` — in any constant or f-string
  that is not a docstring).
- No function is over 60 lines; every CLI command body is at most 30 lines.
- No cli → cli import: a module of ``cli/`` imports, of the ``rooflake.cli`` package, only ``rooflake.cli.common``
  (the app, the error handler, the shared options) and ``rooflake.cli.output`` (tables written out); besides,
  ``cli/common.py`` imports ``rooflake.cli.coercion`` (its typer patch) and ``rooflake.cli`` (the help's command
  summaries), and ``cli/__init__.py`` imports the command modules by name (``importlib``) to register them. A
  command's computation lives in the library; an option two commands share, in ``common.py``.
- The repository stands alone: no package file (code, SQL, data) names ``../shared``.
- No issue numbers in comments: a comment or docstring of package code (``#`` and ``--`` comments, docstrings)
  says in words what the code saves or why, never ``issue 14`` / ``issue #14`` (a reader who clones the project
  has no tracker; tests, docs and the CHANGELOG may cite issues).

These tests need no fixture: they read the source tree only.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# folder -> the rooflake subpackages it may import (its own always allowed); api/ is the package rooflake itself
ALLOWED: dict[str, set[str]] = {
    "api": {"schema", "ingest", "store", "pipeline", "queries", "views", "render", "instrument", "spark"},
    "schema": set(),
    # ingest models each recorded op's work by the rules rl estimate uses (rooflake.instrument.shapes): one rule set
    "ingest": {"schema", "instrument"},
    "store": {"schema"},
    "instrument": {"schema"},
    "pipeline": {"schema", "ingest", "store"},
    "queries": {"schema", "store"},
    "views": {"schema", "store", "queries"},
    "render": {"schema"},
    "spark": {"schema", "store", "queries"},
    "cli": {
        "schema",
        "ingest",
        "store",
        "pipeline",
        "queries",
        "views",
        "render",
        "instrument",
        "spark",
        "api",
    },
}
# the modules of cli/ that another module of cli/ may import, and what each module may import besides
CLI_SHARED = {"rooflake.cli.common", "rooflake.cli.output"}
CLI_ALSO = {"cli/common.py": {"rooflake.cli.coercion", "rooflake.cli"}}
PACKAGES = [p for p in ALLOWED if (ROOT / p).is_dir()]
# the one module that may hold SQL text in Python: the runner that loads and binds the .sql files
SQL_ALLOWED = {"queries/runner.py"}
MAX_FUNCTION_LINES = 60
MAX_COMMAND_LINES = 30

SQL_STATEMENT = re.compile(
    r"^\s*(?:SELECT\b[\s\S]*\bFROM\b|WITH\s+\w+\s+AS\s*\(|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?"
    r"(?:TABLE|VIEW|MACRO|INDEX|SEQUENCE)\b|INSERT\s+INTO\b|COPY\b[\s\S]*\bTO\b|ATTACH\b|PRAGMA\b|DROP\s+\w+|"
    r"UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b)"
)


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "api":  # the package rooflake itself
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["rooflake", *parts])


def _layer(module: str) -> str | None:
    """The folder of ``rooflake.X...`` (X a subpackage), ``api`` for rooflake's own modules (``rooflake.reporting``,
    the front door), None outside rooflake."""
    parts = module.split(".")
    if parts[0] != "rooflake":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED and parts[1] != "api" else "api"


def _imports(tree: ast.Module) -> list[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every import anywhere in the module (function-local ones too)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module, [a.name for a in node.names]))
    return out


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_imports_respect_the_layers(path: Path) -> None:
    own = path.relative_to(ROOT).parts[0]
    bad = []
    for line, module, names in _imports(_tree(path)):
        # `from rooflake import x`: the module rooflake.x, or a name of the front door (api)
        for target in [f"{module}.{n}" for n in names] if module == "rooflake" else [module]:
            layer = _layer(target)
            if layer is not None and layer != own and layer not in ALLOWED[own]:
                bad.append(f"{_rel(path)}:{line} imports {target} ({own} may import {sorted(ALLOWED[own])})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", sorted((ROOT / "cli").rglob("*.py")), ids=_rel)
def test_no_cli_module_imports_another(path: Path) -> None:
    """Of ``rooflake.cli``, a module imports only :data:`CLI_SHARED` (and what :data:`CLI_ALSO` names for it)."""
    allowed = CLI_SHARED | CLI_ALSO.get(_rel(path), set()) | {_module_name(path)}
    bad = []
    for line, module, names in _imports(_tree(path)):
        targets = [f"{module}.{n}" for n in names] if module == "rooflake.cli" else [module]
        if module == "rooflake.cli" and "rooflake.cli" in allowed:
            targets = [module]
        for target in targets:
            if (target == "rooflake.cli" or target.startswith("rooflake.cli.")) and target not in allowed:
                bad.append(
                    f"{_rel(path)}:{line} imports {target}: share it through cli/common.py or the library"
                )
    assert not bad, "\n".join(bad)


def test_the_cli_import_check_can_fail() -> None:
    """The check sees both spellings of a cli → cli import."""
    tree = ast.parse("from rooflake.cli.ceilings_cmds import x\nfrom rooflake.cli import roofline_cmds\n")
    found = [m if m != "rooflake.cli" else f"{m}.{n[0]}" for _, m, n in _imports(tree)]
    assert found == ["rooflake.cli.ceilings_cmds", "rooflake.cli.roofline_cmds"]
    assert not set(found) & CLI_SHARED


def _package_files() -> list[Path]:
    """Every file the package is built from: each folder of :data:`ALLOWED` (code, SQL, data)."""
    return sorted(
        f for pkg in PACKAGES for f in (ROOT / pkg).rglob("*") if f.is_file() and "__pycache__" not in f.parts
    )


def test_no_package_file_names_the_shared_folder() -> None:
    """A user or contributor who clones the project has no ``../shared`` beside it: no package file may need it or
    send anyone there (the design is docs/architecture.md; NVIDIA's tools are installed from NVIDIA)."""
    bad = []
    for f in _package_files():
        data = f.read_bytes()
        if b"../shared" in data or b"shared/fixtures" in data or b"shared/tools" in data:
            text = data.decode("utf-8", "replace").splitlines()
            bad += [f"{_rel(f)}:{i}: {t.strip()[:100]}" for i, t in enumerate(text, 1) if "shared/" in t]
    assert not bad, "\n".join(bad)


ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)


def _commentary(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a package file: the ``#`` comments and docstrings of a
    module; the ``--`` comments of an SQL file (no package SQL file has a ``/* */`` block)."""
    import io
    import tokenize

    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sql":
        return [(i, line[line.index("--") :]) for i, line in enumerate(text.splitlines(), 1) if "--" in line]
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    out = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    tree = ast.parse(text)
    docs = _docstrings(tree)
    strings = (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return out + [(n.lineno, n.value) for n in strings if id(n) in docs]


def _issue_numbers(path: Path) -> list[str]:
    return [
        f"{_rel(path)}:{line}: {' '.join(text.split())[:100]}"
        for line, text in _commentary(path)
        if ISSUE_NUMBER.search(text)
    ]


def test_no_issue_numbers_in_comments() -> None:
    """A comment says what the code saves or why, in words: a reader of the package has no issue tracker."""
    files = [f for f in _package_files() if f.suffix in (".py", ".sql")]
    bad = [hit for f in files for hit in _issue_numbers(f)]
    assert not bad, "say why in words, not by issue number:\n" + "\n".join(bad)


def test_the_issue_number_check_can_fail(tmp_path: Path) -> None:
    """Both spellings are caught in a comment, a docstring and an SQL comment; a plain string and prose about
    an issue are not."""
    code = tmp_path / "m.py"
    code.write_text(
        '"""Fast start (issue 14)."""\nx = 1  # see issue #9\ny = "issue 3 in a plain string"\n'
        "# an issue with 3 parts\n"
    )
    sql = tmp_path / "q.sql"
    sql.write_text("-- pruned (Issue 21)\nSELECT 1\n")
    found = {
        (f.name, line) for f in (code, sql) for line, text in _commentary(f) if ISSUE_NUMBER.search(text)
    }
    assert found == {("m.py", 1), ("m.py", 2), ("q.sql", 1)}


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_no_private_names_imported_from_other_modules(path: Path) -> None:
    me = _module_name(path)
    bad = []
    for line, module, names in _imports(_tree(path)):
        if not module.startswith("rooflake.") or module == me:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        hidden = [p for p in module.split(".") if p.startswith("_") and not p.startswith("__")]
        if private or hidden:
            bad.append(f"{_rel(path)}:{line} imports {private or hidden} from {module}")
    assert not bad, "\n".join(bad)


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _string_texts(tree: ast.Module) -> list[tuple[int, str]]:
    docs = _docstrings(tree)
    docs |= {
        id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values
    }  # seen whole below
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out.append((node.lineno, node.value))
        elif isinstance(
            node, ast.JoinedStr
        ):  # an f-string: its literal parts joined, values as a placeholder
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
            out.append((node.lineno, str(text)))
    return out


@pytest.mark.parametrize("path", [p for p in _modules() if _rel(p) not in SQL_ALLOWED], ids=_rel)
def test_no_sql_in_python_strings(path: Path) -> None:
    bad = [
        f"{_rel(path)}:{line}: {' '.join(text.split())[:80]!r}"
        for line, text in _string_texts(_tree(path))
        if SQL_STATEMENT.match(text)
    ]
    assert not bad, "SQL belongs in a .sql file:\n" + "\n".join(bad)


def test_the_sql_check_can_fail() -> None:
    """The pattern catches the forms SQL takes in Python code, and leaves prose alone."""
    tree = ast.parse(
        'x = "SELECT a FROM t"\ny = f"CREATE OR REPLACE VIEW {n} AS SELECT 1"\nz = "COPY t TO \'f\'"\n'
        'w = "\\n  WITH a AS (SELECT 1) SELECT * FROM a"\nv = "Select the kernels from the store"\n'
    )
    hits = [line for line, text in _string_texts(tree) if SQL_STATEMENT.match(text)]
    assert hits == [1, 2, 3, 4]


def _functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_no_function_over_60_lines(path: Path) -> None:
    bad = [
        f"{_rel(path)}:{f.lineno} {f.name}: {f.end_lineno - f.lineno + 1} lines"
        for f in _functions(_tree(path))
        if f.end_lineno is not None and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not bad, "\n".join(bad)


def _is_command(f: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for d in f.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr in ("command", "callback"):
            return True
    return False


@pytest.mark.parametrize("path", sorted((ROOT / "cli").rglob("*.py")), ids=_rel)
def test_cli_command_bodies_are_short(path: Path) -> None:
    """A command's body (from its first statement, past the signature of typer options) is ≤ 30 lines."""
    bad = []
    for f in _functions(_tree(path)):
        if not _is_command(f) or f.end_lineno is None:
            continue
        body = (
            f.body[1:]
            if isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant)
            else f.body
        )
        lines = f.end_lineno - body[0].lineno + 1 if body else 0
        if lines > MAX_COMMAND_LINES:
            bad.append(f"{_rel(path)}:{f.lineno} {f.name}: body {lines} lines")
    assert not bad, "\n".join(bad)


def test_every_data_file_is_package_data() -> None:
    """CI installs a regular wheel: a .sql/.csv file the package-data globs miss would be absent there."""
    import fnmatch

    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs, data = cfg["package-dir"], cfg["package-data"]
    missing = []
    for package, folder in dirs.items():
        globs = data.get(package, []) + data.get("*", [])
        for f in sorted((ROOT / folder).rglob("*")):
            if f.suffix not in (".sql", ".csv", ".toml", ".json", ".xz") or "__pycache__" in f.parts:
                continue
            rel = f.relative_to(ROOT / folder).as_posix()
            if not any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/") for g in globs):
                missing.append(f"{folder}/{rel}")
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
