"""PostgreSQL's text COPY format as a source (issue 26 item 1): what a server's COPY ... TO
writes loads back identically, by every strategy and in create mode; the format is sniffed."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import SourceError
from core.load.job import LoadJob
from core.sources import pgtext
from core.sources.factory import open_source
from core.spec import ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

STRATEGIES = [c.id for c in all_strategies() if not c.script_only] + ["auto"]

COLUMNS = ("id int, t text, j jsonb, a text[], ia int[], b bytea, iv interval, ts timestamptz, "
           "d date, n numeric, f float8, bo boolean")

_PIECES = ["\t", "\n", "\r", "\r\n", "\\", "\\N", "\\.", "\\t", "N", ".", '"', "'", ",", "{", "}", " ", "é",
           "日本", "🎉", "\x01", "\b", "\f", "\v", "x", "NULL", "a\\", "\\\\"]


def _text(rng: random.Random) -> str | None:
    k = rng.random()
    if k < 0.1:
        return None
    if k < 0.2:
        return ""
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8)))


def _fill(conn: psycopg.Connection[Any], table: str, n: int, seed: int) -> None:
    """Random rows of hostile values in every kind of column."""
    rng = random.Random(seed)
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), sql.SQL(COLUMNS)))
    rows = []
    for i in range(n):
        t = _text(rng)
        rows.append((
            i, t,
            None if rng.random() < 0.2 else psycopg.types.json.Jsonb(rng.choice([t, {"k": t, "n": None}, [1, t], "str"])),
            None if rng.random() < 0.2 else [_text(rng), _text(rng)],
            None if rng.random() < 0.2 else [rng.randint(-5, 5), None],
            None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 6))),
            None if rng.random() < 0.2 else f"{rng.randint(-40, 40)} days {rng.randint(0, 23)}:00:01.5",
            None if rng.random() < 0.2 else rng.choice(["2024-03-15 14:30:00+02", "infinity", "1999-12-31 23:59:59.999999Z"]),
            None if rng.random() < 0.2 else rng.choice(["2024-02-29", "0001-01-01 BC", "-infinity"]),
            None if rng.random() < 0.2 else rng.choice(["123.4500", "NaN", "-0.000001", "1e-20"]),
            None if rng.random() < 0.2 else rng.choice(["1.5e300", "-0", "Infinity", "NaN", "2.2250738585072014e-308"]),
            None if rng.random() < 0.2 else rng.random() < 0.5,
        ))
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES ({})").format(
            sql.Identifier(table), sql.SQL(", ").join(sql.Placeholder() * 12)), rows)


def _copy_out(conn: psycopg.Connection[Any], table: str, header: bool = False) -> bytes:
    """What the server's own COPY ... TO writes in text format (psql's \\copy to)."""
    opts = sql.SQL(" (FORMAT text, HEADER)" if header else "")
    out = bytearray()
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} TO STDOUT").format(sql.Identifier(table)) + opts) as copy:
        for data in copy:
            out += data
    return bytes(out)


def _load(dsn: str, path: Path, table: str, strategy: str = "auto", **kw: Any) -> tuple[LoadJob, Any]:
    source, batch_rows = kw.pop("source", {}), kw.pop("batch_rows", None)
    spec = LoadSpec(source=SourceOptions(path=str(path), **source), target=TargetSpec(table=table, **kw),
                    strategy=strategy, dsn=dsn, batch_rows=batch_rows)
    job = LoadJob(spec)
    return job, job.run()


@pytest.fixture
def exported(conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path) -> tuple[str, Path]:
    src = table_name("pgsrc")
    _fill(conn, src, 300, seed=26)
    path = tmp_path / "export.txt"  # psql's \copy writes any name; .txt is sniffed as CSV by its name
    path.write_bytes(_copy_out(conn, src))
    return src, path


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_server_export_loads_back_identically_by_every_strategy(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    exported: tuple[str, Path],
) -> None:
    src, path = exported
    dst = table_name("pgdst")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    job, result = _load(dsn, path, dst, strategy)
    assert job.spec.source.format == "pgtext"  # sniffed, not read as the TSV its tabs suggest
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (300, 300, 0)
    assert _copy_out(conn, dst) == path.read_bytes()


def test_create_mode_keeps_every_value_and_null_apart_from_empty(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], exported: tuple[str, Path],
) -> None:
    src, path = exported
    dst = table_name("pgnew")
    _job, result = _load(dsn, path, dst, mode=LoadMode.CREATE)
    assert result.rows_loaded == 300
    # The new table's types are inferred (a numeric column whose sample holds NaN may become double
    # precision): each value, read back as the original column's type, is the same value.
    names = [c.split()[0] for c in COLUMNS.split(", ")]
    types = [c.split(" ", 1)[1] for c in COLUMNS.split(", ")]
    same = sql.SQL(" AND ").join(
        sql.SQL("s.{} IS NOT DISTINCT FROM d.{}::text::{}").format(sql.Identifier(n), sql.Identifier(f"column_{i + 1}"),
                                                                  sql.SQL(t))
        for i, (n, t) in enumerate(zip(names, types)))
    row = conn.execute(sql.SQL("SELECT count(*) FROM {} s JOIN {} d ON s.id = d.column_1 WHERE {}").format(
        sql.Identifier(src), sql.Identifier(dst), same)).fetchone()
    assert row is not None and row[0] == 300
    texts = [i for i, t in enumerate(types) if t in ("text", "jsonb", "text[]", "bytea", "interval")]
    assert all(line.split(b"\t")[i] == back.split(b"\t")[i] for line, back in
               zip(path.read_bytes().splitlines(), _copy_out(conn, dst).splitlines()) for i in texts)


def test_raw_path_sends_the_bytes_to_copy_text(dsn: str, conn: psycopg.Connection[Any],
                                                table_name: Callable[[str], str], exported: tuple[str, Path]) -> None:
    src, path = exported
    dst = table_name("pgraw")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    job, _result = _load(dsn, path, dst, "copy-csv")
    assert job.ctx.raw and not job.ctx.no_raw  # no parsing: the file's lines went to COPY (FORMAT text)
    assert _copy_out(conn, dst) == path.read_bytes()


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_header_line_and_small_chunks(dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
                                      tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL 15's HEADER in text format is sniffed; records cut across chunks stay whole."""
    monkeypatch.setattr(pgtext, "CHUNK_BYTES", chunk)
    src = table_name("pghead")
    _fill(conn, src, 120, seed=chunk)
    path = tmp_path / "with_header"
    path.write_bytes(_copy_out(conn, src, header=True))
    source = open_source(SourceOptions(str(path)))
    assert source.format == "pgtext" and source.columns() == ["id", "t", "j", "a", "ia", "b", "iv", "ts", "d", "n",
                                                               "f", "bo"]
    dst = table_name("pgheaddst")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    _load(dsn, path, dst, "copy-binary", batch_rows=7)  # parsed
    assert _copy_out(conn, dst) == _copy_out(conn, src)


def _values(path: Path, **opts: Any) -> list[tuple[Any, ...]]:
    source = open_source(SourceOptions(str(path), **opts))
    return [row for b in source.batches(1000) for row in b.frame.rows()]


def test_hand_written_escapes(tmp_path: Path) -> None:
    """What COPY FROM reads besides what COPY TO writes: octal and hex escapes, an escaped tab, a
    record continued by an escaped newline, CRLF line ends and the end-of-data line."""
    path = tmp_path / "hand.tsv"
    path.write_bytes(b"1\t\\101\\x42\\x4\\q\t\\N\r\n"
                     b"2\ta\\\tb\t\\\\N\r\n"
                     b"3\tline one\\\nline two\t\r\n"
                     b"\\.\r\n"
                     b"4\tafter the end\tx\r\n")
    assert _values(path, format="pgtext") == [
        ("1", "AB\x04q", None), ("2", "a\tb", "\\N"), ("3", "line one\nline two", ""),
    ]


def test_plain_tsv_stays_tsv(tmp_path: Path) -> None:
    path = tmp_path / "plain.tsv"
    path.write_text('id\tname\n1\t"quoted"\n2\t\n')
    assert open_source(SourceOptions(str(path))).format == "tsv"


@pytest.mark.parametrize(("body", "line", "why"), [
    (b"1\tok\n2\tbad\\000\n", 2, "column 'column_2': an escape makes a NUL byte"),
    (b"1\tok\n2\t\\xff\\xfe\n", 2, "not UTF-8"),
    (b"1\tok\n2\tx\ty\n3\tz\n", 2, "has 3 fields, expected 2"),
    (b"1\tok\n2\tok\n\n4\tz\n", 3, "is a blank line, expected 2 fields"),
])
def test_bad_escape_or_width_is_refused_with_line_and_column(tmp_path: Path, body: bytes, line: int,
                                                             why: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(body)
    with pytest.raises(SourceError) as err:
        _values(path, format="pgtext")
    assert err.value.line == line and why in str(err.value) and str(path) in str(err.value)


def test_skip_sets_bad_records_aside(dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
                                     tmp_path: Path) -> None:
    path = tmp_path / "some_bad.txt"
    path.write_bytes(b"1\t\\N\n2\tx\\0\n3\ta\tb\n4\t\\\\\n")
    dst = table_name("pgskip")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, t text)").format(sql.Identifier(dst)))
    spec = LoadSpec(source=SourceOptions(str(path)), target=TargetSpec(dst), dsn=dsn, on_error=ErrorPolicy.SKIP,
                    reject_file=str(tmp_path / "rejects.csv"))
    result = LoadJob(spec).run()
    assert (result.rows_loaded, result.rows_rejected) == (2, 2)
    rows = conn.execute(sql.SQL("SELECT id, t FROM {} ORDER BY id").format(sql.Identifier(dst))).fetchall()
    assert rows == [(1, None), (4, "\\")]


def test_signs_far_into_the_file_are_found(tmp_path: Path) -> None:
    """A catalog's export (pg_rewrite's) shows its first backslash after 450 kB of plain lines."""
    path = tmp_path / "rules.copy"
    tree = '({QUERY :x "q" ' * 40
    plain = "".join(f"{i}\t{tree}\t-\n" for i in range(600))
    path.write_text(plain + "601\ta \\\\ backslash\t\\N\n")
    assert len(plain) > 1 << 18
    assert open_source(SourceOptions(str(path))).format == "pgtext"
    assert _values(path)[-1] == ("601", "a \\ backslash", None)


def test_auto_sends_a_large_export_raw(dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
                                       exported: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Above copy-binary's size, an export whose columns have no exact binary form here (arrays,
    interval, unconstrained numeric) goes as its own lines."""
    from core import auto

    monkeypatch.setattr(auto, "BINARY_MIN_BYTES", 1000)
    src, path = exported
    dst = table_name("pgauto")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    job, result = _load(dsn, path, dst)
    assert result.chosen is not None and result.chosen["strategy"] == "copy-csv" and job.ctx.raw
    assert _copy_out(conn, dst) == path.read_bytes()


@pytest.mark.parametrize(("body", "header"), [
    (b"name\tcity\nAlice\tParis\nBob\tOslo\n", True),  # all text: the values are not identifiers
    (b"gr\xc3\xb6\xc3\x9fe\tid\n\\N\t1\nx\t2\n", True),  # a non-ASCII name
    (b"alice\tparis\nbob\toslo\n", False),  # names all through: nothing proves a header
    (b"1\t\\N\n2\tx\n", False),
])
def test_header_only_when_the_sample_proves_it(tmp_path: Path, body: bytes, header: bool) -> None:
    path = tmp_path / "h.txt"
    path.write_bytes(body)
    source = open_source(SourceOptions(str(path), format="pgtext"))
    assert source.dialect.header is header  # type: ignore[attr-defined]


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary"])
def test_a_folder_of_exports_loads_as_one(strategy: str, dsn: str, conn: psycopg.Connection[Any],
                                          table_name: Callable[[str], str], exported: tuple[str, Path],
                                          tmp_path: Path) -> None:
    """Monthly psql exports in a folder (with an empty month): one table, raw or parsed."""
    src, path = exported
    folder = tmp_path / "months"
    folder.mkdir()
    lines = path.read_bytes().splitlines(keepends=True)
    for i, start in enumerate(range(0, len(lines), 120)):
        (folder / f"m{i}.txt").write_bytes(b"".join(lines[start:start + 120]))
    (folder / "m9.txt").write_bytes(b"")
    dst = table_name("pgmany")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    job, result = _load(dsn, folder, dst, strategy)
    assert job.spec.source.format == "pgtext" and result.rows_loaded == 300
    assert sorted(_copy_out(conn, dst).splitlines()) == sorted(path.read_bytes().splitlines())


def test_a_jsonb_export_without_nulls_loads_back(dsn: str, conn: psycopg.Connection[Any],
                                                table_name: Callable[[str], str], tmp_path: Path) -> None:
    """No \\N and no escape in it, but commas in every line: it was split at its commas and lost its
    first row as a header. Quotes inside fields and none around one show the text format."""
    src = table_name("jsrc")
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, doc jsonb)").format(sql.Identifier(src)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, jsonb_build_object('k', i, 'tags', jsonb_build_array('a', 'b')) "
                         "FROM generate_series(0, 999) i").format(sql.Identifier(src)))
    path = tmp_path / "docs.txt"
    path.write_bytes(_copy_out(conn, src))
    source = open_source(SourceOptions(str(path)))
    assert source.format == "pgtext" and source.dialect.header is False  # type: ignore[attr-defined]
    dst = table_name("jdst")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    _load(dsn, path, dst)
    assert _copy_out(conn, dst) == path.read_bytes()


def test_a_tsv_with_commas_in_its_values_splits_at_tabs(tmp_path: Path) -> None:
    path = tmp_path / "notes.tsv.txt"
    path.write_text("1\ta, b, c\n2\td, e, f\n3\tg, h, i\n")  # (split at commas: three fields, alike too)
    source = open_source(SourceOptions(str(path)))
    assert source.dialect.delimiter == "\t" and len(source.columns()) == 2  # type: ignore[attr-defined]


def test_auto_types_a_large_export_beside_its_raw_lines(dsn: str, conn: psycopg.Connection[Any],
                                                         table_name: Callable[[str], str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Above copy-binary's size, an export of typable columns goes as copy-binary with the warm
    start (core/auto.py has the figures), and loads back byte for byte."""
    from core import auto

    monkeypatch.setattr(auto, "BINARY_MIN_BYTES", 1000)
    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 1000)
    src = table_name("typed_src")
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, t text, d date, ts timestamptz, n numeric(12,2))")
                 .format(sql.Identifier(src)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'a\tb ' || i END, "
                         "date '1900-01-01' + i, timestamptz '2021-03-04 05:06:07.5+05:30' + i * interval '1.25 s', "
                         "i / 8.0 FROM generate_series(0, 2999) i").format(sql.Identifier(src)))
    path = tmp_path / "typed.txt"
    path.write_bytes(_copy_out(conn, src))
    dst = table_name("typed_dst")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    _job, result = _load(dsn, path, dst)
    assert result.chosen is not None and result.chosen["strategy"] == "copy-binary"
    assert _copy_out(conn, dst) == path.read_bytes()


def test_the_first_raw_chunks_are_small_then_grow(tmp_path: Path) -> None:
    """As for CSV: the server gets its first records after a quarter MB, and an end marker
    (`\\.`) still ends the data wherever the growing blocks fall."""
    body = b"".join(b"%d\tsome\\ttext %d\t2024-01-0%d\n" % (i, i, i % 9 + 1) for i in range(300_000))
    path = tmp_path / "export.txt"
    path.write_bytes(body + b"\\.\nnot data\n")
    chunks = list(open_source(SourceOptions(str(path))).raw_chunks(4 << 20))
    sizes = [len(c.data) for c in chunks]
    assert sizes[0] <= pgtext.FIRST_CHUNK_BYTES < sizes[1] < sizes[2] and max(sizes) < (4 << 20) + 100
    assert b"".join(c.data for c in chunks) == body and sum(c.records for c in chunks) == 300_000
