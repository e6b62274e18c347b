"""Hostile names, hostile scripts and secrets: quoted exactly, refused early, never echoed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.cli import main
from core.errors import ConnectError, SluiceError, SourceError
from core.load.job import LoadJob
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

SCHEMA = 'we"ird Schema; --'
TABLE = "Robert'); DROP TABLE canary;--"
COLUMNS = ['Mixed Case', 'say "hi"', "select * from canary", "a,b"]


@pytest.fixture
def hostile(conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A hostile schema with a canary table beside it; both dropped afterwards."""
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    conn.execute(sql.SQL("CREATE TABLE {} (x int)").format(sql.Identifier(SCHEMA, "canary")))
    yield SCHEMA
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(SCHEMA)))


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.csv"
    header = ",".join('"' + c.replace('"', '""') + '"' for c in COLUMNS)
    rows = [f'{i},"v ""{i}""",{i * 2},"x,{i}"' for i in range(1, 51)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _make(conn: psycopg.Connection[Any], table: str) -> None:
    cols = [sql.SQL("{} int PRIMARY KEY").format(sql.Identifier(COLUMNS[0])),
            sql.SQL("{} text").format(sql.Identifier(COLUMNS[1])),
            sql.SQL("{} int").format(sql.Identifier(COLUMNS[2])),
            sql.SQL("{} text").format(sql.Identifier(COLUMNS[3]))]
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(SCHEMA, table), sql.SQL(", ").join(cols)))


def _check(conn: psycopg.Connection[Any], table: str, rows: int = 50) -> None:
    got = conn.execute(sql.SQL("SELECT count(*), sum({}), max({}) FROM {}").format(
        sql.Identifier(COLUMNS[2]), sql.Identifier(COLUMNS[1]), sql.Identifier(SCHEMA, table))).fetchone()
    assert got == (rows, sum(i * 2 for i in range(1, rows + 1)), 'v "9"')
    # Nothing else ran: the canary is still there, and only the expected tables exist.
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(SCHEMA, "canary"))).fetchone() == (0,)
    names = {r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %s", [SCHEMA]).fetchall()}
    assert names <= {"canary", table, "_sluice_checkpoint", "_sluice_2pc"}


@pytest.mark.parametrize("strategy", [c.id for c in all_strategies() if not c.script_only])
def test_hostile_names_load_into_exactly_that_table(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], hostile: str, tmp_path: Path
) -> None:
    _make(conn, TABLE)
    spec = LoadSpec(SourceOptions(str(_file(tmp_path))), TargetSpec(TABLE, schema=SCHEMA), strategy=strategy,
                    batch_rows=7, dsn=dsn)
    assert LoadJob(spec).run().rows_loaded == 50
    _check(conn, TABLE)


@pytest.mark.parametrize(
    ("mode", "commit", "policy"),
    [
        (LoadMode.CREATE, CommitMode.SINGLE, ErrorPolicy.ABORT),
        (LoadMode.UPSERT, CommitMode.SINGLE, ErrorPolicy.ABORT),
        (LoadMode.UPSERT, CommitMode.PER_BATCH, ErrorPolicy.SKIP),
        (LoadMode.TRUNCATE, CommitMode.PER_BATCH, ErrorPolicy.ABORT),
        (LoadMode.APPEND, CommitMode.SINGLE, ErrorPolicy.SKIP),
    ],
)
def test_hostile_names_through_every_mode_and_policy(
    mode: LoadMode, commit: CommitMode, policy: ErrorPolicy, dsn: str, conn: psycopg.Connection[Any],
    hostile: str, tmp_path: Path,
) -> None:
    table = TABLE + uuid.uuid4().hex[:4]
    if mode is not LoadMode.CREATE:
        _make(conn, table)
    columns = [ColumnMap(c, c, t) for c, t in zip(COLUMNS, ["integer", "text", "integer", "text"])]
    spec = LoadSpec(SourceOptions(str(_file(tmp_path))),
                    TargetSpec(table, schema=SCHEMA, mode=mode, key=[COLUMNS[0]] if mode is LoadMode.UPSERT else []),
                    strategy="copy-csv", batch_rows=9, dsn=dsn, commit=commit, on_error=policy, columns=columns,
                    reject_file=str(tmp_path / "rejects.csv"))
    for _ in range(2 if mode is LoadMode.UPSERT else 1):  # upsert twice: the second run updates in place
        assert LoadJob(spec).run().rows_loaded == 50
    _check(conn, table)


def test_script_with_a_refused_statement_sends_nothing(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    table = f"script_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE TABLE {} (id int, note text)").format(sql.Identifier(table)))
    good = "".join(f"INSERT INTO {table} (id, note) VALUES ({i}, 'n{i}');\n" for i in range(2_000))
    for tail, line in ((f"DROP TABLE {table};\n", 2_001),
                       (f"INSERT INTO {table} (id, note) VALUES (1, 'x'); COPY {table} TO PROGRAM 'id';\n", 2_001),
                       (f"INSERT INTO {table} (id, note) VALUES (1, pg_sleep(5)::text);\n", 2_001)):
        path = tmp_path / "evil.sql"
        path.write_text(good + tail, encoding="utf-8")
        for strategy in ("script-autocommit", "copy-csv"):
            spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)
            with pytest.raises(SourceError, match=f"line {line}"):
                LoadJob(spec).run()
            assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))


def test_password_is_never_echoed(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "s3cr3t-Pa55"
    # An unreachable server: the error names the server, not the password.
    params = conninfo_to_dict(dsn)
    bad = make_conninfo(dsn, password=secret, host="127.0.0.1", port="1", connect_timeout="3")
    spec = LoadSpec(SourceOptions(str(_file(tmp_path))), TargetSpec("t"), dsn=bad)
    with pytest.raises(ConnectError) as err:
        LoadJob(spec).run()
    assert secret not in str(err.value) and "127.0.0.1" in str(err.value)
    # A working server (trust auth ignores the password): logs, JSON, profile and errors stay clean.
    table = f"pw_{uuid.uuid4().hex[:8]}"
    good = make_conninfo(dsn, password=secret)
    logs: list[str] = []
    LoadJob(LoadSpec(SourceOptions(str(_file(tmp_path))), TargetSpec(table, mode=LoadMode.CREATE), dsn=good,
                     commit=CommitMode.PER_BATCH), on_log=logs.append).run()
    assert logs and not any(secret in m for m in logs)
    prof = tmp_path / "p.toml"
    code = main(["load", str(_file(tmp_path)), "--table", table, "--dsn", good, "--json", "--save-profile", str(prof),
                 "--restart"])
    out = capsys.readouterr()
    assert code == 0 and secret not in out.out + out.err and secret not in prof.read_text()
    code = main(["load", str(tmp_path / "missing.csv"), "--table", table, "--dsn", good, "--json"])
    out = capsys.readouterr()
    assert code == 2 and secret not in out.out + out.err
    with pytest.raises(SluiceError) as failed:
        LoadJob(LoadSpec(SourceOptions(str(_file(tmp_path))), TargetSpec("no_such_table_here"), dsn=good)).run()
    assert secret not in str(failed.value)
    book = conn.execute("SELECT string_agg(t::text, ' ') FROM _sluice_checkpoint t").fetchone()
    assert book is not None and secret not in str(book[0])
    assert "password" not in params  # the fixture's own DSN had none to begin with
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
