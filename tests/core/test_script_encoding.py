"""A script made with `pg_dump -E WIN1252` (or LATIN1...) says so in its preamble and is read that way;
one in a multi-byte encoding such as SJIS is refused with what to do. Found by a QA pass: such
dumps were read as UTF-8 and refused at their first accented byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import ConfigError
from core.load.job import run_load
from core.spec import LoadSpec, SourceOptions, TargetSpec

_PREAMBLE = "SET statement_timeout = 0;\nSET client_encoding = '{enc}';\nSET standard_conforming_strings = on;\n\n"
_WORDS = ["café", "naïve ÿ ß", "€ euro"]


@pytest.mark.parametrize(("pg_name", "codec"), [("WIN1252", "cp1252"), ("LATIN9", "iso8859-15")])
@pytest.mark.parametrize("shape", ["copy", "inserts"])
def test_a_dump_in_a_single_byte_encoding_loads_with_no_options(
    pg_name: str, codec: str, shape: str, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    table = table_name("enc")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, t text)").format(sql.Identifier(table)))
    if shape == "copy":
        body = f"COPY public.{table} (id, t) FROM stdin;\n" + "".join(
            f"{i}\t{w}\n" for i, w in enumerate(_WORDS, 1)) + "\\.\n"
    else:
        body = "".join(f"INSERT INTO public.{table} VALUES ({i}, '{w}');\n" for i, w in enumerate(_WORDS, 1))
    path = tmp_path / "dump.sql"
    path.write_bytes((_PREAMBLE.format(enc=pg_name) + body).encode(codec))
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), dsn=dsn))
    got = conn.execute(sql.SQL("SELECT t FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert [r[0] for r in got] == _WORDS


def test_a_dump_in_a_multibyte_encoding_is_refused_with_what_to_do(dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "sjis.sql"
    path.write_bytes((_PREAMBLE.format(enc="SJIS") + "INSERT INTO public.e VALUES (1, 'ソ');\n").encode("shift_jis"))
    with pytest.raises(ConfigError, match="iconv -f SJIS -t UTF-8"):
        run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table="e"), dsn=dsn))
