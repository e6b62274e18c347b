"""Issue 26 item 5: a quote that never closes until a later stray one swallows whole records into
one value; psql loads it and says nothing. Sluice stops (abort) or sets it aside (skip), naming
the line where the quote opened and where it closed; real multi-line values still load."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import BadRecordError
from core.load.job import LoadJob
from core.sources.csv import swallowed
from core.sources.csv.swallowed import _multiline_quoted, swallowing
from core.spec import CommitMode, ErrorPolicy, LoadSpec, SourceOptions, TargetSpec

STRATEGIES = ["auto", "copy-csv", "copy-binary", "executemany", "parallel-copy"]


def _swallowing_file(path: Path, rng: random.Random, width: int, delimiter: str,
                     close_inside: bool = False) -> tuple[int, int, int]:
    """A header and good records, one of which opens a quote closed only `k` records later, by a
    stray quote at a field's end (or, `close_inside`, inside a field: a bare quote, which sends the
    file through the careful field-by-field reader instead of COPY).
    Returns (rows in the file as COPY would count them, open line, close line)."""
    rows = rng.randint(300, 1200)
    k = rng.randint({2: 4, 3: 2, 4: 2}.get(width, 1), 120)
    open_line = rng.randint(2, rows - k)
    close_line = open_line + k + 1
    at = rng.randint(0, width - 1)  # the field whose opening quote is never closed where it should be
    out = [delimiter.join(f"col{i}" for i in range(width))]
    for line in range(2, rows + 2):
        fields = [str(line)] + [f"v{line}x{i}" for i in range(1, width)]
        if line == open_line:
            fields[at] = '"oops' + fields[at]  # the rest of this line goes into the quoted value
        elif line == close_line:
            # a stray quote far below closes it; the fields add up
            fields = ['ta"il' if close_inside else 'tail"'] + fields[at + 1:]
        out.append(delimiter.join(fields))
    path.write_text("\n".join(out) + "\n")
    return rows - k - 1, open_line, close_line


@pytest.fixture
def table_for(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> Callable[[int], str]:
    def make(width: int) -> str:
        t = table_name("swallow")
        cols = sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(f"col{i}")) for i in range(width))
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(t), cols))
        return t
    return make


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", range(3))
def test_abort_names_where_the_quote_opened_and_closed(
    strategy: str, seed: int, dsn: str, table_for: Callable[[int], str], tmp_path: Path,
) -> None:
    rng = random.Random(seed * 31 + len(strategy))
    width = rng.choice([2, 3, 5, 7, 9])
    delimiter = rng.choice([",", ";", "\t", "|"])
    _rows, opened, closed = _swallowing_file(tmp_path / "data.csv", rng, width, delimiter)
    spec = LoadSpec(SourceOptions(str(tmp_path / "data.csv")), TargetSpec(table_for(width)), strategy=strategy,
                    dsn=dsn)
    with pytest.raises(BadRecordError) as err:
        LoadJob(spec).run()
    assert err.value.line == opened and err.value.exit_code == 1
    assert f"opens at line {opened} and closes only at line {closed}" in str(err.value)


@pytest.mark.parametrize("seed", range(3))
def test_skip_sets_the_swallowing_record_aside(seed: int, dsn: str, conn: psycopg.Connection[Any],
                                               table_for: Callable[[int], str], tmp_path: Path) -> None:
    rng = random.Random(seed)
    width = rng.choice([3, 6])
    records, opened, _closed = _swallowing_file(tmp_path / "data.csv", rng, width, ",")
    table = table_for(width)
    spec = LoadSpec(SourceOptions(str(tmp_path / "data.csv")), TargetSpec(table), dsn=dsn,
                    on_error=ErrorPolicy.SKIP, reject_file=str(tmp_path / "rejects.csv"))
    result = LoadJob(spec).run()
    assert (result.rows_loaded, result.rows_rejected) == (records - 1, 1)
    assert f"opens at line {opened}" in (tmp_path / "rejects.csv").read_text()
    got = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE col{} LIKE '%oops%'").format(
        sql.Identifier(table), sql.SQL(str(width - 1)))).fetchone()
    assert got == (0,)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_stray_quote_inside_a_field_that_closes_it_is_named_too(
    strategy: str, dsn: str, table_for: Callable[[int], str], tmp_path: Path,
) -> None:
    """The closing quote stands inside a field (`ta"il`): COPY would read the file differently, so
    the careful reader reads it, and it too must not let the quote swallow the records."""
    rng = random.Random(len(strategy))
    width = rng.choice([3, 5, 7])
    _rows, opened, closed = _swallowing_file(tmp_path / "data.csv", rng, width, ",", close_inside=True)
    spec = LoadSpec(SourceOptions(str(tmp_path / "data.csv")), TargetSpec(table_for(width)), strategy=strategy,
                    dsn=dsn)
    with pytest.raises(BadRecordError) as err:
        LoadJob(spec).run()
    assert err.value.line == opened
    assert f"opens at line {opened} and closes only at line {closed}" in str(err.value)


@pytest.mark.parametrize("seed", range(2))
def test_per_batch_byte_ranges_refuse_a_swallowing_chunk(
    seed: int, dsn: str, conn: psycopg.Connection[Any], table_for: Callable[[int], str], tmp_path: Path,
) -> None:
    """parallel-copy per batch sends the file's byte ranges, cut and counted by one reader: a range
    whose quote swallowed records goes through the parser, which names the line (the streams'
    own counts agreed with the server's, and the load reported success)."""
    rng = random.Random(seed)
    width = rng.choice([3, 5])
    _rows, opened, closed = _swallowing_file(tmp_path / "data.csv", rng, width, ",")
    table = table_for(width)
    spec = LoadSpec(SourceOptions(str(tmp_path / "data.csv")), TargetSpec(table), strategy="parallel-copy",
                    commit=CommitMode.PER_BATCH, dsn=dsn)
    with pytest.raises(BadRecordError) as err:
        LoadJob(spec).run()
    assert err.value.line == opened
    assert f"opens at line {opened} and closes only at line {closed}" in str(err.value)
    got = conn.execute(sql.SQL("SELECT count(*) FROM {} AS t WHERE t::text LIKE '%oops%'").format(
        sql.Identifier(table))).fetchone()
    assert got == (0,)  # the chunks committed before it hold no swallowed value


def test_skip_sets_aside_a_record_swallowed_up_to_a_stray_quote_inside_a_field(
    dsn: str, table_for: Callable[[int], str], tmp_path: Path,
) -> None:
    records, opened, _closed = _swallowing_file(tmp_path / "data.csv", random.Random(7), 4, ";", close_inside=True)
    spec = LoadSpec(SourceOptions(str(tmp_path / "data.csv")), TargetSpec(table_for(4)), dsn=dsn,
                    on_error=ErrorPolicy.SKIP, reject_file=str(tmp_path / "rejects.csv"))
    result = LoadJob(spec).run()
    assert (result.rows_loaded, result.rows_rejected) == (records - 1, 1)
    assert f"opens at line {opened}" in (tmp_path / "rejects.csv").read_text()


def _prose(rng: random.Random) -> str:
    words = ["the", "cat", "sat,", "on", "a", "mat,", "and", "then,", "slept", '""quoted""', "yes,"]
    return "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(2, 9)))


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary", "parallel-copy"])
def test_real_multi_line_values_still_load(strategy: str, dsn: str, conn: psycopg.Connection[Any],
                                          table_for: Callable[[int], str], tmp_path: Path) -> None:
    """Addresses, prose with commas, pretty-printed JSON: values of many lines, none shaped like
    the file's records."""
    rng = random.Random(5)
    width = 4
    lines = ["col0,col1,col2,col3"]
    expected = []
    for i in range(800):
        kind = i % 3
        value = (f"{i} Main St,\nSpringfield, IL, 62701\nUSA" if kind == 0 else
                 _prose(rng) if kind == 1 else json.dumps({"id": i, "tags": ["a", "b"], "n": None}, indent=2))
        text = value.replace('""', '"') if kind == 1 else value
        expected.append(text)
        lines.append(f'{i},x,"{value.replace(chr(34), chr(34) * 2) if kind != 1 else value}",y')
    path = tmp_path / "multi.csv"
    path.write_text("\n".join(lines) + "\n")
    table = table_for(width)
    result = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)).run()
    assert result.rows_loaded == 800
    got = [r[0] for r in conn.execute(sql.SQL("SELECT col2 FROM {} ORDER BY col0::int").format(
        sql.Identifier(table))).fetchall()]
    assert got == expected


@pytest.mark.alone
def test_the_scan_is_linear() -> None:
    """No backtracking: a record of many quotes and delimiters takes time in proportion to its size."""
    import time

    def timed(n: int) -> float:
        rec = (b'"a""b",' * n + b'"x\n' + b"1,2,3\n" * n + b'y"')
        t = time.perf_counter()
        list(_multiline_quoted(rec, b",", b'"'))
        swallowing(rec, b",", b'"', 3, 1)
        return time.perf_counter() - t

    small, large = min(timed(20_000) for _ in range(3)), min(timed(200_000) for _ in range(3))
    assert large < small * 30  # 10x the input: ~10x the time, far from 100x


@pytest.mark.parametrize("seed", range(3))
def test_warm_units_are_looked_at_once_and_still_refused(seed: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm start's units (parsed later, on the encoder) were looked at for swallowing records
    as the reader cut them: parse_later does not look again, and a swallowing record is still
    refused, at the line where its quote opened."""
    from core.errors import SourceError
    from core.sources.base import ParseLater
    from core.sources.factory import open_source

    rng = random.Random(seed)
    width = rng.choice([3, 5, 9])
    path = tmp_path / "data.csv"
    opened = _swallowing_file(path, rng, width, ",")[1]
    looked: list[int] = []
    real = swallowed.set_apart
    monkeypatch.setattr(swallowed, "set_apart",
                        lambda *a, **k: looked.append(1) or real(*a, **k))

    def units(source_path: Path) -> list[int]:
        source = open_source(SourceOptions(str(source_path)))
        heights = []
        for item in source.raw_or_parsed(lambda: True, 100, unit_bytes=2 << 10, raw_bytes=1 << 10):
            assert isinstance(item, ParseLater)
            heights += [b.frame.height for b in source.parse_later(item, 100)]
        return heights

    with pytest.raises(SourceError) as err:
        units(path)
    assert err.value.line == opened
    good = tmp_path / "good.csv"
    good.write_text("a,b,c\n" + "".join(f'{i},"two\nlines, {i}",x\n' for i in range(500)))
    looked.clear()
    assert sum(units(good)) == 500 and looked == []
