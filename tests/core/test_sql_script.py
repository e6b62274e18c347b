"""The INSERT-script source: pg_dump output parses; anything else is refused with its line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.errors import SourceError
from core.sources.sqlscript.reader import ScriptError, iter_script, list_tables, validate_script
from core.sources.sqlscript.source import SqlScriptSource
from core.spec import SourceOptions

PG_DUMP = """--
-- PostgreSQL database dump
--

\\restrict abc123
SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);

--
-- Data for Name: Mixed Case; Type: TABLE DATA; Schema: public; Owner: postgres
--

INSERT INTO public."Mixed Case" ("Col A", b, c) VALUES (1, 'it''s', NULL);
INSERT INTO public."Mixed Case" ("Col A", b, c) VALUES (2, 'semi; colon -- not a comment', true);
INSERT INTO public."Mixed Case" ("Col A", b, c) VALUES (3, 'multi
line', false);
INSERT INTO public."Mixed Case" ("Col A", b, c) VALUES (4, E'tab\\there\\nnew', '2020-01-01'::date);
insert into public."Mixed Case" ("Col A", b, c) values (5, $$dollar 'quoted'$$, -1.5e3), (6, /* c */ 'x', +3);

SELECT pg_catalog.setval('public.seq', 6, true);
\\unrestrict abc123
"""


def _write(tmp_path: Path, text: str, name: str = "s.sql", encoding: str = "utf-8") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return str(p)


def _rows(path: str) -> list[list[str | None]]:
    out: list[list[str | None]] = []
    for chunk in iter_script(path, rows_per_chunk=2):
        cols = chunk.columns
        out.extend([list(r) for r in zip(*cols)])
    return out


def test_pg_dump_column_inserts(tmp_path: Path) -> None:
    path = _write(tmp_path, PG_DUMP)
    target, statements, rows = validate_script(path)
    assert (target.schema, target.table, target.columns) == ("public", "Mixed Case", ("Col A", "b", "c"))
    assert (statements, rows) == (5, 6)
    assert _rows(path) == [
        ["1", "it's", None],
        ["2", "semi; colon -- not a comment", "true"],
        ["3", "multi\nline", "false"],
        ["4", "tab\there\nnew", "2020-01-01"],
        ["5", "dollar 'quoted'", "-1.5e3"],
        ["6", "x", "+3"],
    ]


def test_line_numbers_follow_statements(tmp_path: Path) -> None:
    path = _write(tmp_path, PG_DUMP)
    lines = [ln for chunk in iter_script(path) for ln in chunk.lines]
    assert lines == [15, 16, 17, 19, 20, 20]


def test_bulk_path_matches_careful_path(tmp_path: Path) -> None:
    fast = "".join(f"insert into demo (key,value) values ({i},{i * 7 % 13});\n" for i in range(5000))
    slow = "".join(f"insert into demo (key,value) values ( {i} , /* c */ {i * 7 % 13} );\n" for i in range(5000))
    a, b = _rows(_write(tmp_path, fast, "a.sql")), _rows(_write(tmp_path, slow, "b.sql"))
    assert a == b and len(a) == 5000 and a[3] == ["3", "8"]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("INSERT INTO t VALUES (1);\nDROP TABLE t;\n", 2, "refused statement"),
        ("INSERT INTO t VALUES (1); COPY t TO PROGRAM 'rm -rf /';\n", 1, "only COPY ... FROM stdin"),
        ("COPY t FROM '/etc/passwd';\n", 1, "only COPY ... FROM stdin"),
        ("INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2;\n", 1, "ON CONFLICT DO NOTHING"),
        ("INSERT INTO t VALUES (1);\n\nINSERT INTO t VALUES (now());\n", 3, "function call"),
        ("INSERT INTO t VALUES ((SELECT 1));\n", 1, "literal"),
        ("INSERT INTO t (a, b) VALUES (1);\n", 1, "expected 2"),
        ("INSERT INTO t VALUES ('never closed);\n", 1, "unterminated"),
        ("INSERT INTO t VALUES (1) RETURNING *;\n", 1, "after the values"),
        ("\\! rm -rf /\n", 1, "meta-command"),
        ("DO $$ BEGIN PERFORM 1; END $$;\n", 1, "refused statement"),
    ],
)
def test_refused_with_line_number(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ScriptError) as err:
        validate_script(path)
    assert err.value.line == line
    assert words in str(err.value)
    with pytest.raises(SourceError) as src_err:
        SqlScriptSource(SourceOptions(path))
    assert src_err.value.line == line


def test_bom_and_latin1(tmp_path: Path) -> None:
    bom = _write(tmp_path, "\ufeffINSERT INTO t VALUES ('é');\n", "bom.sql")
    assert _rows(bom) == [["é"]]
    latin = _write(tmp_path, "INSERT INTO t VALUES ('é');\n", "l1.sql", encoding="latin-1")
    assert [r for c in iter_script(latin, encoding="latin-1") for r in zip(*c.columns)] == [("é",)]


# -- never a hang: parsing time grows linearly, whatever the file holds -------------------------


def _digits(n: int) -> str:
    return "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES (" + "1" * n + "." + "2" * n + "e" + ", 1" * 3 + ");\n"


def _open_quote(n: int) -> str:
    return "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES ('" + "ab ''c'', d" * (n // 10) + ");\n"


def _many_rows(n: int) -> str:
    rows = ",\n\t".join(f"({i}, '{i}''s, x', NULL, 12345678901234567890.5)" for i in range(n // 40))
    return f"INSERT INTO t VALUES (0, 'a', NULL, 1);\nINSERT INTO t VALUES\n\t{rows};\n"


def _long_statement(n: int) -> str:
    return "INSERT INTO t VALUES (1, 'a');\nINSERT INTO t VALUES (2, '" + "x, '');\n" * (n // 8) + "');\n"


def _near_miss(n: int) -> str:
    # Bodies the bulk path refuses (a cast), each read again the careful way.
    return "".join(f"INSERT INTO t VALUES ({i}, '1'::int, 'q''q');\n" for i in range(n // 40))


def _digit_rows(n: int) -> str:
    # The shape that hung the old backtracking pattern: many-row VALUES of long numbers that do not match.
    row = "(" + ", ".join(["1234567890" * 3] * 8) + ")"
    return "INSERT INTO t VALUES " + ", ".join([row] * (n // 260)) + ", (1a);\n"


def _backslashes(n: int) -> str:
    # An E'' string of escapes that never ends: the scanner must not look for the quote at each one.
    return "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES (E'" + "\\\\ x" * (n // 4) + ");\n"


def _nested_comments(n: int) -> str:
    return "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES (1 " + "/* */ /* " * (n // 9) + ");\n"


def _one_line_semicolons(n: int) -> str:
    return ";" * n + "\nINSERT INTO t VALUES (1);\n"


def _parse_seconds(path: str) -> float:
    import time

    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        try:
            validate_script(path)
        except ScriptError:
            pass
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize(
    "make",
    [_digits, _open_quote, _many_rows, _long_statement, _near_miss, _digit_rows, _backslashes, _nested_comments,
     _one_line_semicolons],
)
@pytest.mark.alone
def test_time_per_byte_stays_flat(tmp_path: Path, make: Callable[[int], str]) -> None:
    """Ten times the input takes about ten times as long (generous slack for a noisy machine)."""
    small = _write(tmp_path, make(100_000), "small.sql")
    big = _write(tmp_path, make(1_000_000), "big.sql")
    t_small, t_big = _parse_seconds(small), _parse_seconds(big)
    per_byte_small = t_small / Path(small).stat().st_size
    per_byte_big = t_big / Path(big).stat().st_size
    assert per_byte_big < 4 * per_byte_small + 2e-8, (make.__name__, t_small, t_big)
    assert t_big < 20, (make.__name__, t_big)


def _one_line_inserts(n: int) -> str:
    # Many statements on one line: each is read from where the last one ended, the rest never copied.
    return "INSERT INTO t VALUES (0, 'a');\n" + "INSERT INTO t VALUES (1, 'x');" * (n // 30) + "\n"


def _one_line_mixed(n: int) -> str:
    # The same with E'' strings, comments and dollar quotes, whose searches must not restart at each statement.
    stmts = "INSERT INTO t VALUES (1, E'\\\\');INSERT INTO t VALUES (2 /* c */, 'y');INSERT INTO t VALUES (3, $$z$$);"
    return "INSERT INTO t VALUES (0, 'a');\n" + stmts * (n // len(stmts)) + "\n"


@pytest.mark.alone
@pytest.mark.parametrize("make", [_one_line_inserts, _one_line_mixed])
def test_time_per_byte_stays_flat_with_many_statements_on_one_line(tmp_path: Path, make: Callable[[int], str]) -> None:
    """As above, with more statements: 2 MB of 30-byte INSERTs on one line took 15 s before (quadratic;
    ten times the bytes took a hundred times as long, as it would at 1 MB against 100 kB)."""
    small = _write(tmp_path, make(100_000), "small.sql")
    big = _write(tmp_path, make(1_000_000), "big.sql")
    t_small, t_big = _parse_seconds(small), _parse_seconds(big)
    per_byte_small = t_small / Path(small).stat().st_size
    per_byte_big = t_big / Path(big).stat().st_size
    assert per_byte_big < 4 * per_byte_small + 2e-8, (make.__name__, t_small, t_big)
    assert t_big < 20, (make.__name__, t_big)


def test_preamble_of_pg_dump_15_to_18_is_skipped(tmp_path: Path) -> None:
    text = (
        "\\restrict KtzRc1H9fbGc7wsw\nSET transaction_timeout = 0;\nSET default_table_access_method = heap;\n"
        "SELECT pg_catalog.set_config('search_path', '', false);\n"
        "COPY public.t (a, b) FROM stdin;\n1\tx\n2\t\\N\n\\.\n\n"
        "SELECT pg_catalog.setval('public.t_a_seq', 2, true);\n\\unrestrict KtzRc1H9fbGc7wsw\n"
    )
    path = _write(tmp_path, text)
    tables = list_tables(path)
    assert [(t.target.display(), t.rows, t.kind) for t in tables] == [("public.t", 2, "copy")]
    assert _rows(path) == [["1", "x"], ["2", None]]


def test_several_tables_listed_in_file_order(tmp_path: Path) -> None:
    text = (
        "INSERT INTO public.b VALUES (1, 'x');\nINSERT INTO public.b VALUES (2, 'y');\n"
        "COPY public.a (k) FROM stdin;\n7\n\\.\nINSERT INTO public.c (z) VALUES (1), (2), (3);\n"
    )
    path = _write(tmp_path, text)
    assert [t.describe() for t in list_tables(path)] == [
        "public.b (2 rows)", "public.a (1 rows)", "public.c (3 rows)",
    ]
    source = SqlScriptSource(SourceOptions(path, script_table="a"))
    assert source.columns() == ["k"] and source.sample().rows() == [("7",)]


@pytest.mark.parametrize(
    ("block", "rows"),
    [
        ("\\.\n", []),  # no rows: the end follows the COPY line at once
        ("1\tx\n\\.\r\nINSERT INTO t2 VALUES (1);\n", [["1", "x"]]),  # a dump that went through Windows
        ("1\t\\.x\n2\ty\n\\.", [["1", ".x"], ["2", "y"]]),  # a row starting with \. is not the end; EOF ends it
    ],
)
def test_copy_block_ends_where_psql_ends_it(tmp_path: Path, block: str, rows: list[list[str]]) -> None:
    path = _write(tmp_path, "COPY public.t (a, b) FROM stdin;\n" + block)
    t = list_tables(path)[0]
    assert (t.target.display(), t.rows) == ("public.t", len(rows))
    assert [list(r) for c in iter_script(path, table=t.target) for r in zip(*c.columns)] == rows


def test_copy_block_without_its_end_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "SET x = 1;\nCOPY public.t (a) FROM stdin;\n1\n2\n\\.x\n")
    with pytest.raises(ScriptError) as err:
        list_tables(path)
    assert err.value.line == 2 and "not ended" in str(err.value)


def test_one_row_statements_checked_in_one_pass_match_the_careful_path(tmp_path: Path) -> None:
    """--inserts blocks are found and checked in one pass; strings holding ';\\n' or '), (' and a
    cast half-way send the block the quote-parity way, and every row comes out the same."""
    values = ["'a;\nb'", "'x''), (''y'", "NULL", "'2013-01-01 05:01:37+00'", "-1.5e3", "true", "''"]
    fast = "".join(f"INSERT INTO public.t VALUES ({i}, {values[i % len(values)]});\n" for i in range(3000))
    odd = fast.replace("VALUES (1500, ", "VALUES (1500::int, ")
    slow = "".join(f"INSERT INTO public.t VALUES ( {i} , /* c */ {values[i % len(values)]} );\n" for i in range(3000))
    want = _rows(_write(tmp_path, slow, "slow.sql"))
    assert _rows(_write(tmp_path, fast, "fast.sql")) == want
    assert _rows(_write(tmp_path, odd, "odd.sql")) == want
    assert want[1] == ["1", "x'), ('y"] and want[0] == ["0", "a;\nb"] and want[2] == ["2", None]
    lines = [ln for c in iter_script(_write(tmp_path, fast, "fast.sql")) for ln in c.lines]
    assert lines[:3] == [1, 3, 4]
