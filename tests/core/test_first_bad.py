"""Issue 26 item 4: under abort the first bad record in file order is the one reported, whatever
its kind, as bad data (exit status 1); an empty file loads 0 rows with a note."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import main
from core.errors import BadRecordError, BadRowError, ConfigError, SourceError
from core.load.job import LoadJob
from core.spec import CommitMode, LoadMode, LoadSpec, SourceOptions, TargetSpec

WIDTH = 7


def _write(path: Path, rows: int, bad_value: int | None, ragged: int | None, pgtext: bool = False) -> Path:
    """A header and `rows` records; a value the table refuses at line `bad_value`, a record of too
    few fields at line `ragged` (1-based file lines, the header being line 1)."""
    sep = "\t" if pgtext else ","
    out = [sep.join(f"c{i}" for i in range(WIDTH))] if not pgtext else []
    first = 1 if pgtext else 2
    for line in range(first, rows + first):
        fields = [str(line), str(line * 7), "text, with a comma" if not pgtext else "tab\\there", "\\N" if pgtext else "",
                  "2024-03-15", "1.5", "t"]
        if line == bad_value:
            fields[1] = "not a number"
        if line == ragged:
            fields = fields[:4]
        out.append(sep.join(f'"{f}"' if "," in f else f for f in fields))
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.fixture
def target(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    t = table_name("firstbad")
    conn.execute(sql.SQL("CREATE TABLE {} (c0 int, c1 int, c2 text, c3 text, c4 date, c5 numeric, c6 bool)")
                 .format(sql.Identifier(t)))
    return t


def _run(dsn: str, path: Path, table: str, strategy: str, commit: CommitMode, **source: Any) -> None:
    spec = LoadSpec(SourceOptions(str(path), **source), TargetSpec(table), strategy=strategy, dsn=dsn,
                    batch_rows=None if strategy == "auto" else 97, commit=commit)
    LoadJob(spec, restart=True).run()


CASES = [(s, CommitMode.SINGLE) for s in ("auto", "copy-csv", "copy-binary", "copy-text", "executemany", "unnest",
                                          "parallel-copy")] + \
        [(s, CommitMode.PER_BATCH) for s in ("copy-csv", "copy-binary", "pipeline")]


@pytest.mark.parametrize(("strategy", "commit"), CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_bad_value_before_a_ragged_record_is_the_one_reported(
    strategy: str, commit: CommitMode, seed: int, dsn: str, target: str, tmp_path: Path,
) -> None:
    rng = random.Random(seed)
    rows = rng.randint(1500, 3000)
    bad_value = rng.randint(20, rows // 2)
    ragged = rng.randint(bad_value + 250, rows)  # batches later: the reader meets it while the COPY is open
    path = _write(tmp_path / "data.csv", rows, bad_value, ragged)
    with pytest.raises(BadRowError) as err:
        _run(dsn, path, target, strategy, commit)
    assert err.value.problem.line == bad_value and err.value.exit_code == 1


@pytest.mark.parametrize(("strategy", "commit"), CASES)
@pytest.mark.parametrize("pgtext", [False, True])
def test_a_ragged_record_before_a_bad_value_is_the_one_reported_as_bad_data(
    strategy: str, commit: CommitMode, pgtext: bool, dsn: str, target: str, tmp_path: Path,
) -> None:
    ragged, bad_value = 42, 452
    path = _write(tmp_path / "data.txt", 2000, bad_value, ragged, pgtext=pgtext)
    with pytest.raises(BadRecordError) as err:
        _run(dsn, path, target, strategy, commit, **({"format": "pgtext"} if pgtext else {}))
    assert err.value.line == ragged and "has 4 fields, expected 7" in str(err.value)
    assert err.value.exit_code == 1


def test_the_cli_exits_1_for_either_kind(dsn: str, target: str, tmp_path: Path) -> None:
    value_first = _write(tmp_path / "v.csv", 600, 42, 452)
    ragged_first = _write(tmp_path / "r.csv", 600, 452, 42)
    for path in (value_first, ragged_first):
        assert main(["load", str(path), "--table", target, "--dsn", dsn, "--strategy", "copy-binary"]) == 1


# -- an empty file ---------------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"", b"\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"  \n"])
def test_an_empty_file_appends_nothing_and_says_so(body: bytes, dsn: str, conn: psycopg.Connection[Any],
                                                    target: str, tmp_path: Path) -> None:
    conn.execute(sql.SQL("INSERT INTO {} (c0) VALUES (1)").format(sql.Identifier(target)))
    path = tmp_path / "empty.csv"
    path.write_bytes(body)
    logs: list[str] = []
    result = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(target), dsn=dsn), on_log=logs.append).run()
    assert (result.rows_read, result.rows_loaded) == (0, 0)
    assert "the file is empty" in result.note and any("the file is empty" in m for m in logs)
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(target))).fetchone()
    assert row == (1,)


def test_an_empty_file_with_a_saved_mapping_still_loads_nothing(dsn: str, target: str, tmp_path: Path) -> None:
    from core.spec import ColumnMap

    path = tmp_path / "march.csv"
    path.write_bytes(b"")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(target), dsn=dsn,
                    columns=[ColumnMap("c0", "id", "int"), ColumnMap("c2", "name", "text")])
    assert LoadJob(spec).run().rows_loaded == 0


def test_truncate_with_an_empty_file_empties_the_table_as_psql_would(
    dsn: str, conn: psycopg.Connection[Any], target: str, tmp_path: Path,
) -> None:
    conn.execute(sql.SQL("INSERT INTO {} (c0) VALUES (1)").format(sql.Identifier(target)))
    path = tmp_path / "empty.tsv"
    path.write_bytes(b"")
    result = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(target, mode=LoadMode.TRUNCATE), dsn=dsn)).run()
    assert "truncated" in result.note
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(target))).fetchone() == (0,)


def test_empty_file_cli_exit_0_create_makes_nothing_and_a_missing_table_is_refused(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    new = table_name("never")
    assert main(["load", str(path), "--table", new, "--mode", "create", "--dsn", dsn]) == 0
    assert conn.execute("SELECT to_regclass(%s)", [new]).fetchone() == (None,)
    with pytest.raises(ConfigError, match="does not exist"):
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(new), dsn=dsn)).run()


def test_a_missing_file_is_still_a_usage_error(dsn: str, tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        LoadJob(LoadSpec(SourceOptions(str(tmp_path / "nope.csv")), TargetSpec("t"), dsn=dsn)).foresee()
    assert err.value.exit_code == 2 and not isinstance(err.value, BadRecordError)


def _with(path: Path, rows: int, edits: dict[int, bytes], tail: bytes = b"") -> Path:
    """_write's file with whole lines replaced (1-based file lines) and bytes added at the end."""
    lines = _write(path, rows, None, None).read_bytes().split(b"\n")
    for line, text in edits.items():
        lines[line - 1] = text
    path.write_bytes(b"\n".join(lines) + tail)
    return path


RAW_AND_OTHERS = ["auto", "copy-csv", "copy-binary", "executemany", "parallel-copy"]


@pytest.mark.parametrize("strategy", RAW_AND_OTHERS)
def test_a_bad_value_before_a_quote_open_at_the_end_of_the_file(strategy: str, dsn: str, target: str,
                                                                tmp_path: Path) -> None:
    """The raw path meets the unclosed quote before the bytes of line 42 went to COPY (one chunk):
    it goes through the parser, which sends line 42 first."""
    path = _with(tmp_path / "d.csv", 900, {42: b"42,not a number,x,y,2024-03-15,1,t"}, b'999,1,"never closed\n')
    with pytest.raises(BadRowError) as err:
        _run(dsn, path, target, strategy, CommitMode.SINGLE)
    assert err.value.problem.line == 42


@pytest.mark.parametrize("strategy", RAW_AND_OTHERS)
@pytest.mark.parametrize("pgtext", [False, True])
def test_a_nul_byte_is_a_bad_record_named_by_its_line(strategy: str, pgtext: bool, dsn: str, target: str,
                                                      tmp_path: Path) -> None:
    """COPY would refuse a NUL as an encoding error (which the window read as a script's DEFAULT)."""
    sep = b"\t" if pgtext else b","
    nul = sep.join([b"300", b"1", b"a\x00b", b"x", b"2024-03-15", b"1", b"t"])
    bad = sep.join([b"500", b"not a number", b"x", b"y", b"2024-03-15", b"1", b"t"])
    lines = {300: nul, 500: bad} if pgtext else {301: nul, 501: bad}
    path = _with(tmp_path / "d.txt", 900, lines) if not pgtext else _with_pgtext(tmp_path / "d.txt", lines)
    with pytest.raises(BadRecordError) as err:
        _run(dsn, path, target, strategy, CommitMode.SINGLE, **({"format": "pgtext"} if pgtext else {}))
    assert err.value.line == (300 if pgtext else 301) and "NUL" in str(err.value)


def _with_pgtext(path: Path, edits: dict[int, bytes]) -> Path:
    _write(path, 900, None, None, pgtext=True)
    lines = path.read_bytes().split(b"\n")
    for line, text in edits.items():
        lines[line - 1] = text
    path.write_bytes(b"\n".join(lines))
    return path
