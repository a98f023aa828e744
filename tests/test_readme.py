"""What the README shows exists: every ``memfuse`` command and option it writes parses, and
the options it says every command takes are on every command."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from memfuse_lite.cli import build_parser

README = Path(__file__).parents[1] / "README.md"


def commands_shown() -> list[str]:
    """Every ``memfuse …`` command line of the README: in code blocks and inline code."""
    text = README.read_text()
    lines = [line for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
             for line in block.splitlines()]
    lines += re.findall(r"`(memfuse [^`]+)`", text)
    return [line.split("  #")[0].strip() for line in lines
            if line.strip().startswith("memfuse ")]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # noqa: SLF001 - argparse keeps them here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)  # noqa: SLF001


def test_the_readme_shows_commands() -> None:
    shown = {line.split()[1] for line in commands_shown()}
    assert {"ingest", "import", "search", "ask", "demo", "models", "mcp"} <= shown


@pytest.mark.parametrize("line", commands_shown())
def test_every_command_and_option_the_readme_shows_exists(line: str) -> None:
    commands = subcommands(build_parser())
    name, rest = line.split(maxsplit=2)[1], (line.split(maxsplit=2) + [""])[2]
    assert name in commands, f"README shows `memfuse {name}`"
    parser = commands[name]
    nested = subcommands(parser)
    # "models list | prepare [NAME...] [--all]": each alternative names a subcommand
    for part in rest.split(" | ") if nested else [rest]:
        target = parser
        if nested:
            word = part.split()[0].strip("[]")
            assert word in nested, f"README shows `memfuse {name} {word}`"
            target = nested[word]
        for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", part):
            assert option in options_of(target), f"`memfuse {name}` has no {option}"


def test_the_options_every_command_takes_are_on_every_command() -> None:
    text = README.read_text()
    block = text[text.index("Options every command takes:"):].split("\n\n")[0]
    common = set(re.findall(r"`(--[a-z-]+)", block))
    assert {"--model-dir", "--tz"} <= common
    for name, parser in subcommands(build_parser()).items():
        assert common <= options_of(parser), name


@pytest.mark.parametrize("name", sorted(subcommands(build_parser())))
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([name, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("usage: memfuse " + name)
