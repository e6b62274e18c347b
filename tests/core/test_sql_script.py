"""The INSERT-script source: pg_dump output parses; anything else is refused with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import SourceError
from core.sources.sql_source import SqlScriptSource
from core.sources.sqlscript_parser import ScriptError, iter_script, validate_script
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
        ("INSERT INTO t VALUES (1); COPY t TO PROGRAM 'rm -rf /';\n", 1, "one statement"),
        ("INSERT INTO t VALUES (1);\n\nINSERT INTO t VALUES (now());\n", 3, "function call"),
        ("INSERT INTO t VALUES ((SELECT 1));\n", 1, "literal"),
        ("INSERT INTO t VALUES (1);\nINSERT INTO u VALUES (2);\n", 2, "same table"),
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
