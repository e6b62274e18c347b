"""The README stays a manual and the docs stay true to the code: a README of at most 300 lines,
relative links that lead to files (and headings) that exist, and command-line flags that the
parsers have."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from app.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "RESULTS.md"]

# Flags of other programs that the README names: pg_dump's, for the dump shapes Sluice reads.
OTHER_TOOLS = {"--data-only", "--inserts", "--column-inserts", "--rows-per-insert", "--on-conflict-do-nothing"}

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _parser_flags(parser: argparse.ArgumentParser) -> set[str]:
    flags = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= _parser_flags(sub)
    return flags


def _window_flags(capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The window's options (app/gui.py parses them; its --help lists them)."""
    from app.gui import _parse

    with pytest.raises(SystemExit):
        _parse(["--help"])
    return set(FLAG.findall(capsys.readouterr().out))


def _anchors(doc: Path) -> set[str]:
    """GitHub's ids for the headings of a Markdown file: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    titles = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-") for title in titles}


def _code(text: str) -> str:
    """The README's code: fenced blocks and `inline` spans, where commands and flags are written."""
    fenced = re.findall(r"```.*?```", text, flags=re.S)
    inline = re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.S))
    return "\n".join(fenced + inline)


def test_readme_is_a_manual_of_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move the depth to docs/"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_that_exist(doc: Path) -> None:
    missing = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address, or a heading of the same page
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve()
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            missing.append(target)
    assert not missing, f"{doc.relative_to(ROOT)} links to files or headings that do not exist: {missing}"


def test_every_flag_the_readme_names_exists(capsys: pytest.CaptureFixture[str]) -> None:
    known = _parser_flags(build_parser()) | _window_flags(capsys) | OTHER_TOOLS
    named = set(FLAG.findall(_code(README.read_text(encoding="utf-8"))))
    assert named, "the README names no flag: the pattern is broken"
    assert not named - known, f"README.md names flags the CLI does not have: {sorted(named - known)}"


def test_the_cli_reference_names_every_flag_and_no_other(capsys: pytest.CaptureFixture[str]) -> None:
    parsers = _parser_flags(build_parser()) | _window_flags(capsys)
    named = set(FLAG.findall(CLI_DOC.read_text(encoding="utf-8")))
    assert not parsers - named, f"docs/cli.md does not describe {sorted(parsers - named)}"
    assert not named - parsers, f"docs/cli.md names flags the CLI does not have: {sorted(named - parsers)}"
