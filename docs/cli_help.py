"""Write the output of `rl <command> --help` into README.md between the `<!-- help:NAME -->` markers.

`python docs/cli_help.py` rewrites README.md; tests/test_cli.py checks that README.md equals what this produces.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
COMMANDS = ["", "ingest", "runs", "sql", "layers", "roofline", "check", "compare", "report", "trajectory"]


def help_text(command: str) -> str:
    os.environ["TERMINAL_WIDTH"] = "100"
    os.environ["NO_COLOR"] = "1"
    os.environ.pop("FORCE_COLOR", None)
    import typer.rich_utils
    from typer.testing import CliRunner

    from rooflake.cli import app

    # rich_utils reads these once at import; another import may have come first (pytest)
    typer.rich_utils.MAX_WIDTH = 100
    typer.rich_utils.COLOR_SYSTEM = None
    typer.rich_utils.FORCE_TERMINAL = False

    args = [command, "--help"] if command else ["--help"]
    out = CliRunner().invoke(app, args, prog_name="rl", terminal_width=100).stdout
    return "\n".join(line.rstrip() for line in out.strip("\n").splitlines())


def render(readme: str) -> str:
    for command in COMMANDS:
        name = command or "rl"
        pattern = re.compile(rf"(<!-- help:{name} -->\n```text\n)(.*?)(^```$)", re.S | re.M)
        if not pattern.search(readme):
            raise SystemExit(f"README.md lacks the <!-- help:{name} --> block")
        readme = pattern.sub(
            lambda m, c=command: m.group(1) + help_text(c) + "\n" + m.group(3), readme, count=1
        )
    return readme


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in sys.argv:
        sys.exit(0 if new == text else 1)
    README.write_text(new, encoding="utf-8")
