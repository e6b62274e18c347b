"""A profile finds its source file again, wherever it was saved and run from."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import profile
from core.spec import LoadSpec, SourceOptions, TargetSpec


@pytest.mark.parametrize("where", ["profiles/p.toml", "p.toml", "../elsewhere/p.toml"])
def test_a_relative_source_is_found_from_the_profiles_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Found by running the window on a profile from `load data/x.csv --save-profile ...`:
    the path was written as typed, relative to the command's folder, and read back relative to
    the profile's, so the file was 'not found'."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "profiles").mkdir()
    (tmp_path / "elsewhere").mkdir()
    data = work / "data" / "x.csv"
    data.write_text("a\n1\n", encoding="utf-8")
    monkeypatch.chdir(work)
    profile.save(LoadSpec(SourceOptions("data/x.csv"), TargetSpec("t")), where)
    monkeypatch.chdir(tmp_path)  # run from another folder
    spec, _ = profile.load(work / where)
    assert Path(spec.source.path) == data.resolve()


def test_a_profile_beside_its_file_keeps_the_bare_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "x.csv").write_text("a\n1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    profile.save(LoadSpec(SourceOptions("x.csv"), TargetSpec("t")), "p.toml")
    assert 'path = "x.csv"' in (tmp_path / "p.toml").read_text(encoding="utf-8")


def test_an_absolute_source_is_kept_as_it_is(tmp_path: Path) -> None:
    source = str(tmp_path / "x.csv")
    profile.save(LoadSpec(SourceOptions(source), TargetSpec("t")), tmp_path / "sub.toml")
    spec, _ = profile.load(tmp_path / "sub.toml")
    assert spec.source.path == source
