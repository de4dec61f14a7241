"""``rl COMMAND`` imports only that command's module (issue 14): every command of the full app is in
``rooflake.cli.COMMANDS``, and each works (``--help``) in a fresh process that loaded only its modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer

from rooflake import cli

CODE = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"


def _commands(app: typer.Typer) -> set[str]:
    return set(typer.main.get_group(app).commands)


def test_every_command_is_mapped_to_its_modules() -> None:
    assert _commands(cli.app) == set(cli.COMMANDS)
    assert {m for ms in cli.COMMANDS.values() for m in ms} == set(cli.MODULES)


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_each_command_alone(name: str) -> None:
    """``rl NAME --help`` in a fresh process: the command is there, and no other command module was imported."""
    probe = (
        "import atexit, json, sys\n"
        "from rooflake import cli\n"
        "atexit.register(lambda: print('LOADED', json.dumps(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
        "if m.startswith('rooflake.cli.') and m.endswith('_cmds')))))\n"
        "sys.argv[0] = 'rl'\n"
        "cli.main()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", probe, name, "--help"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert f"Usage: rl {name} [OPTIONS]" in p.stdout
    loaded = p.stdout.rsplit("LOADED", 1)[1].strip()
    assert set(json.loads(loaded)) <= set(cli.COMMANDS[name]) | {"ceilings_cmds"}, (
        loaded
    )  # roofline imports its helpers


def test_help_and_unknown_commands_see_every_command() -> None:
    p = subprocess.run([sys.executable, "-c", CODE, "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for name in cli.COMMANDS:
        assert f"\n  {name} " in p.stdout, name
    p = subprocess.run([sys.executable, "-c", CODE, "runz"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Did you mean 'runs'?" in p.stderr, p.stderr
