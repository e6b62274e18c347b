"""The SQL-script parser after a QA pass: statements sharing a line, standard_conforming_strings off,
DEFAULT items, X'' bit strings and pg_dump --disable-triggers."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from core.sources.sqlscript import reader as sqlscript_parser
from core.sources.sqlscript.chunks import CsvChunk, ParsedChunk
from core.sources.sqlscript.lexer import DEFAULT_VALUE
from core.sources.sqlscript.reader import ScriptError, iter_script, list_tables, scan_script
from core.sources.sqlscript.source import SqlScriptSource
from core.spec import LoadSpec, SourceOptions, TargetSpec

Rows = list[list[str | None]]


def _write(tmp_path: Path, text: str, name: str = "s.sql") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return str(p)


def _rows(path: str, table: str | None = None) -> Rows:
    target = next(t.target for t in list_tables(path) if table in (None, t.target.table))
    return [list(r) for chunk in iter_script(path, rows_per_chunk=1000, table=target) for r in zip(*chunk.columns)]


def _refused(path: str) -> ScriptError:
    with pytest.raises(ScriptError) as err:
        list_tables(path)
    return err.value


# -- 1. many statements on one line: each read from where the last one ended ----------------------


def test_statements_sharing_a_line_keep_their_rows_and_lines(tmp_path: Path) -> None:
    text = (
        "SET a = 1;;  ; INSERT INTO t VALUES (1, 'x;y'); INSERT INTO t VALUES (2, E'q\\';') ;-- c;\n"
        "INSERT INTO t VALUES (3, /* ; */ 'z');;;\n"
        ";\n"
        "INSERT INTO t VALUES (4, 'multi\nline'); INSERT INTO t VALUES (5, $$;$$);\n"
    )
    path = _write(tmp_path, text)
    assert _rows(path) == [["1", "x;y"], ["2", "q';"], ["3", "z"], ["4", "multi\nline"], ["5", ";"]]
    assert [ln for c in iter_script(path) for ln in c.lines] == [1, 1, 2, 4, 5]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("INSERT INTO t VALUES (1); INSERT INTO t VALUES (now());\n", 1, "function call"),
        ("INSERT INTO t VALUES (1);\nCOPY t (a) FROM stdin; INSERT INTO t VALUES (2);\n", 2, "must end its line"),
        ("INSERT INTO t VALUES (1); \\! rm -rf /\n", 1, "meta-command"),
        ("INSERT INTO t VALUES (1);;; DROP TABLE t;\n", 1, "refused statement"),
    ],
)
def test_the_rest_of_a_line_is_still_checked(tmp_path: Path, text: str, line: int, words: str) -> None:
    err = _refused(_write(tmp_path, text))
    assert err.line == line and words in str(err)


# -- 2. SET standard_conforming_strings = off ------------------------------------------------------


SCS_OFF = (
    "SET standard_conforming_strings = off;\n"
    "INSERT INTO public.w VALUES (1, 'C:\\\\dir\\\\file');\n"
    "INSERT INTO public.w VALUES (2, 'it\\'s; not the end'), (3, 'tab\\there''s');\n"
    "INSERT INTO public.w VALUES (4, 'ends in a backslash\\\\'); INSERT INTO public.w VALUES (5, 'a\\\\');\n"
    "SET standard_conforming_strings = on;\n"
    "INSERT INTO public.w VALUES (6, 'C:\\dir');\n"
)


def test_scs_off_reads_plain_strings_with_backslash_escapes(tmp_path: Path) -> None:
    assert _rows(_write(tmp_path, SCS_OFF)) == [
        ["1", "C:\\dir\\file"], ["2", "it's; not the end"], ["3", "tab\there's"],
        ["4", "ends in a backslash\\"], ["5", "a\\"], ["6", "C:\\dir"],
    ]


ROWS = 1000  # one INSERT a row, then a fifth as many in one multi-row INSERT (3,000 in all took 16 s)


def test_scs_off_in_the_bulk_path(tmp_path: Path) -> None:
    """A long --inserts file: rows with a backslash are read the careful way, in the bulk path or out of it."""
    values = ["'plain'", "'C:\\\\dir'", "'it\\'s'", "'x'';\n'", "NULL", "'\\\\'", "'a\\';\nINSERT'"]
    want = ["plain", "C:\\dir", "it's", "x';\n", None, "\\", "a';\nINSERT"]
    body = "".join(f"INSERT INTO public.w VALUES ({i}, {values[i % len(values)]});\n" for i in range(ROWS))
    rpi = "INSERT INTO public.w VALUES\n\t" + ",\n\t".join(
        f"({i}, {values[i % len(values)]})" for i in range(ROWS, ROWS + ROWS // 5)) + ";\n"
    path = _write(tmp_path, "SET standard_conforming_strings = off;\n" + body + rpi)
    expected = [[str(i), want[i % len(values)]] for i in range(ROWS + ROWS // 5)]
    assert _rows(path) == expected
    # A load's route: rows with a backslash are read again one by one and stay in the bulk CSV, but
    # where a \' fooled the quote parity (two statements taken for one) the careful way reads them.
    chunks = list(scan_script(path, csv=True))
    bulk = sum(c.rows for c in chunks if isinstance(c, CsvChunk))
    assert bulk > 0.4 * (ROWS + ROWS // 5), bulk
    csv = b"".join(c.data for c in chunks if isinstance(c, CsvChunk))
    assert b"'1','C:\\dir'\n" in csv and b"'5','\\'\n" in csv


@pytest.mark.parametrize(
    "setting",
    ["SET standard_conforming_strings TO 'off'", "SET SESSION standard_conforming_strings = false",
     "SELECT pg_catalog.set_config('standard_conforming_strings', 'off', false)"],
)
def test_scs_off_spelled_other_ways(tmp_path: Path, setting: str) -> None:
    path = _write(tmp_path, f"{setting};\nINSERT INTO t VALUES ('a\\'b');\n")
    assert _rows(path) == [["a'b"]]


def test_scs_on_still_refuses_an_unterminated_string(tmp_path: Path) -> None:
    err = _refused(_write(tmp_path, "SET standard_conforming_strings = on;\nINSERT INTO t VALUES ('it\\'s');\n"))
    assert err.line == 2 and "unterminated" in str(err)


def test_scs_with_an_odd_value_is_refused(tmp_path: Path) -> None:
    err = _refused(_write(tmp_path, "SET x = 1;\nSET standard_conforming_strings = maybe;\n"))
    assert err.line == 2 and "on or off" in str(err)


@pytest.fixture
def scs_off_db(dump_server: str) -> Iterator[str]:
    """A scratch database whose sessions have standard_conforming_strings off; dropped after."""
    name = f"sluice_scs_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dump_server, autocommit=True) as c:
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            c.execute(sql.SQL("ALTER DATABASE {} SET standard_conforming_strings = off").format(sql.Identifier(name)))
            yield make_conninfo(dump_server, dbname=name)
        finally:
            c.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


SCS_FILL = r"""INSERT INTO w SELECT i,
  CASE i % 9 WHEN 0 THEN E'C:\\dir\\file' WHEN 1 THEN E'it\'s' WHEN 2 THEN E'line\nnext\ttab;\n'
    WHEN 3 THEN E'\\\'\\' WHEN 4 THEN E'ends in \\' WHEN 5 THEN NULL WHEN 6 THEN E'\\N \\t \\.'
    WHEN 7 THEN E'x\');\nINSERT INTO w VALUES (1, \'' ELSE 'plain ' || i END,
  E'\\x5c27'::bytea
FROM generate_series(1, 2000) AS i"""


@pytest.mark.parametrize("args", [[], ["--inserts"], ["--column-inserts"], ["--inserts", "--rows-per-insert=40"]])
def test_real_pg_dump_with_scs_off_loads_exactly(scs_off_db: str, args: list[str], tmp_path: Path) -> None:
    from core.load.job import run_load

    with psycopg.connect(scs_off_db, autocommit=True) as c:
        assert c.execute("SHOW standard_conforming_strings").fetchone() == ("off",)
        c.execute("CREATE TABLE w (id int PRIMARY KEY, t text, b bytea)")
        c.execute(SCS_FILL)
        c.execute("CREATE TABLE w_copy (LIKE w)")
        dump = subprocess.run(["pg_dump", f"--dbname={scs_off_db}", "--data-only", "--table=w", *args],
                              check=True, capture_output=True).stdout
        assert b"SET standard_conforming_strings = off;" in dump
        path = tmp_path / "dump.sql"
        path.write_bytes(dump.replace(b"public.w ", b"public.w_copy "))
        result = run_load(LoadSpec(SourceOptions(str(path)), TargetSpec("w_copy"), dsn=scs_off_db))
        assert result.rows_loaded == 2000
        q = ("SELECT (SELECT count(*) FROM (TABLE w EXCEPT ALL TABLE w_copy) a)"
             " + (SELECT count(*) FROM (TABLE w_copy EXCEPT ALL TABLE w) b)")
        assert c.execute(q).fetchone() == (0,)


# -- 3. DEFAULT as a value (generated columns) ---------------------------------------------------------


def test_default_items_in_the_careful_path(tmp_path: Path) -> None:
    text = ("INSERT INTO public.gen VALUES (1, 1, DEFAULT), (2, 2, default);\n"
            "INSERT INTO public.gen VALUES (3, /* c */ 3, Default);\n"
            "INSERT INTO public.gen VALUES (4, 'DEFAULT', DEFAULT);\n")
    assert _rows(_write(tmp_path, text)) == [
        ["1", "1", DEFAULT_VALUE], ["2", "2", DEFAULT_VALUE], ["3", "3", DEFAULT_VALUE], ["4", "DEFAULT", DEFAULT_VALUE],
    ]
    assert "\x00" in DEFAULT_VALUE  # never a value PostgreSQL text can hold


def test_default_items_in_the_bulk_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pg_dump --inserts and --rows-per-insert of a generated column, long enough for the bulk path."""
    bulk_rows = 0
    real = sqlscript_parser.parse_values

    def counting(bodies: Any, width: int, **kw: Any) -> Any:
        nonlocal bulk_rows
        out = real(bodies, width, **kw)
        bulk_rows += out[1].height if out[1] is not None else 0
        return out

    monkeypatch.setattr(sqlscript_parser, "parse_values", counting)
    word = ["'DEFAULT'", "'x'", "NULL"]
    ins = "".join(f"INSERT INTO public.gen VALUES ({i}, DEFAULT, {word[i % 3]});\n" for i in range(3000))
    rpi = "INSERT INTO public.gen VALUES\n\t" + ",\n\t".join(
        f"({i}, DEFAULT, {word[i % 3]})" for i in range(3000, 4000)) + ";\n"
    path = _write(tmp_path, ins + rpi)
    want: Rows = [[str(i), DEFAULT_VALUE, ["DEFAULT", "x", None][i % 3]] for i in range(4000)]
    assert _rows(path) == want
    assert bulk_rows > 3000
    # A load's CSV route: rows with DEFAULT come as frames (the CSV would hold the word as text).
    chunks = list(scan_script(path, csv=True))
    assert chunks and all(isinstance(c, ParsedChunk) for c in chunks)
    assert [list(r) for c in chunks if isinstance(c, ParsedChunk) for r in zip(*c.columns)] == want


# -- 4. X'' bit strings --------------------------------------------------------------------------------


def test_hex_bit_strings_are_their_bits(tmp_path: Path) -> None:
    text = "INSERT INTO t VALUES (X'1F', x'a0', B'101', X'');\n" * 2
    assert _rows(_write(tmp_path, text)) == [["00011111", "10100000", "101", ""]] * 2


def test_a_bad_hex_digit_is_refused_with_its_line(tmp_path: Path) -> None:
    err = _refused(_write(tmp_path, "INSERT INTO t VALUES (X'1F');\nINSERT INTO t VALUES (X'1G');\n"))
    assert err.line == 2 and "hexadecimal" in str(err)


def test_hex_bit_strings_load_as_psql_stores_them(
    dsn: str, conn: psycopg.Connection[Any], table_name: Any, tmp_path: Path
) -> None:
    """Into text, X'1F' is its bits as psql stores them, not the text x1F."""
    from core.load.job import run_load

    ref, t = table_name("bits_ref"), table_name("bits")
    values = "(1, X'1F', X'1F'), (2, B'101', B'101'), (3, x'00ff', X'00ff')"
    for name in (ref, t):
        conn.execute(sql.SQL("CREATE TABLE {} (id int, s text, v bit varying)").format(sql.Identifier(name)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES " + values).format(sql.Identifier(ref)))  # what psql does
    path = _write(tmp_path, f"INSERT INTO public.{t} VALUES {values};\n")
    assert run_load(LoadSpec(SourceOptions(path), TargetSpec(t), dsn=dsn)).rows_loaded == 3
    got = conn.execute(sql.SQL("SELECT id, s, v::text FROM {} ORDER BY id").format(sql.Identifier(t))).fetchall()
    assert got == [(1, "00011111", "00011111"), (2, "101", "101"), (3, "0000000011111111", "0000000011111111")]
    q = sql.SQL("SELECT count(*) FROM (TABLE {} EXCEPT ALL TABLE {}) x").format(sql.Identifier(ref), sql.Identifier(t))
    assert conn.execute(q).fetchone() == (0,)


# -- 5. pg_dump --disable-triggers -------------------------------------------------------------------


@pytest.mark.parametrize("args", [[], ["--inserts"], ["--inserts", "--rows-per-insert=3"]])
def test_real_disable_triggers_dump_is_accepted_and_recorded(
    dump_server: str, args: list[str], tmp_path: Path
) -> None:
    schema, plain = f"Other Schema {uuid.uuid4().hex[:6]}", f"sluice_plain_{uuid.uuid4().hex[:6]}"
    spaced = sql.Identifier(schema, "Spaced Table")
    with psycopg.connect(dump_server, autocommit=True) as c:
        c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            c.execute(sql.SQL("CREATE TABLE {} (a int, b int GENERATED ALWAYS AS (a * 2) STORED, c text)")
                      .format(spaced))
            c.execute(sql.SQL("INSERT INTO {} (a, c) SELECT i, 'x' || i FROM generate_series(1, 5) i").format(spaced))
            c.execute(sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(plain)))
            c.execute(sql.SQL("INSERT INTO {} VALUES (1), (2)").format(sql.Identifier(plain)))
            tables = [f'"{schema}"."Spaced Table"', plain]
            cmd = ["pg_dump", f"--dbname={dump_server}", "--data-only", "--disable-triggers",
                   *[f"--table={t}" for t in tables], *args]
            dump = subprocess.run(cmd, check=True, capture_output=True).stdout
        finally:
            c.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
            c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(plain)))
    assert f'ALTER TABLE "{schema}"."Spaced Table" DISABLE TRIGGER ALL;'.encode() in dump
    path = tmp_path / "dump.sql"
    path.write_bytes(dump)
    got = {(t.target.schema, t.target.table): (t.rows, t.disable_triggers) for t in list_tables(str(path))}
    assert got == {(schema, "Spaced Table"): (5, True), ("public", plain): (2, True)}
    source = SqlScriptSource(SourceOptions(str(path)))
    assert all(t.disable_triggers for t in source.tables)
    if args:  # --inserts writes DEFAULT for the generated column
        assert [r[1] for r in _rows(str(path), "Spaced Table")] == [DEFAULT_VALUE] * 5


def test_disable_triggers_only_for_the_table_named(tmp_path: Path) -> None:
    text = (
        "ALTER TABLE public.never_loaded DISABLE TRIGGER ALL;\n"
        "INSERT INTO public.a VALUES (1);\n"
        "ALTER TABLE ONLY public.b DISABLE TRIGGER ALL;\n"
        "COPY public.b (x) FROM stdin;\n1\n\\.\n"
        "ALTER TABLE public.b ENABLE TRIGGER ALL;\n"
        "ALTER TABLE public.a ENABLE TRIGGER ALL;\n"
    )
    got = [(t.target.table, t.disable_triggers) for t in list_tables(_write(tmp_path, text))]
    assert got == [("a", False), ("b", True)]


@pytest.mark.parametrize(
    "stmt",
    [
        "ALTER TABLE t ADD COLUMN x int;",
        "ALTER TABLE t DISABLE TRIGGER my_trigger;",
        "ALTER TABLE t DISABLE TRIGGER ALL, ADD COLUMN x int;",
        "ALTER TABLE t DISABLE TRIGGER USER;",
        "ALTER ROLE postgres DISABLE TRIGGER ALL;",
        "ALTER TABLE a.b.c DISABLE TRIGGER ALL;",
    ],
)
def test_any_other_alter_is_refused_with_its_line(tmp_path: Path, stmt: str) -> None:
    err = _refused(_write(tmp_path, f"INSERT INTO t VALUES (1);\n{stmt}\n"))
    assert err.line == 2 and "refused statement" in str(err)
