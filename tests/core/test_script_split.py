"""A big COPY block of a plain dump cut in two and sent over two branches of a two-phase commit.

SPLIT_BYTES is lowered so a few thousand rows count as big. Two branches show as two
transactions: the rows of a split block carry two different xmin values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.cancel import CancelToken
from core.errors import BadRowError, Cancelled
from core.events import Phase, Progress
from core.load import context as run_context
from core.load.job import LoadJob, LoadResult
from core.load.protocols import script_split
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

ROWS = 3000
HEAD = "--\n-- PostgreSQL database dump\n--\n\nSET statement_timeout = 0;\n\n"  # the COPY line is line 7
DDL = "CREATE TABLE {} (id integer PRIMARY KEY, note text, at timestamptz)"


def _row(i: int) -> str:
    notes = ["plain", "tab\\there", "two\\nlines", "back\\\\slash", "\\N", "", "émoji 🎉", "comma, \"quote\""]
    at = "\\N" if i % 11 == 0 else f"2024-01-{1 + i % 28:02d} 10:{i % 60:02d}:00+00"
    return f"{i}\t{notes[i % len(notes)]}\t{at}\n"


def _dump(tmp_path: Path, table: str, rows: list[str], name: str = "dump.sql", before: str = "") -> Path:
    path = tmp_path / name
    text = HEAD + before + f"COPY public.{table} (id, note, at) FROM stdin;\n" + "".join(rows) + "\\.\n\n"
    path.write_text(text, encoding="utf-8")
    return path


def _load(dsn: str, path: Path, table: str, **kw: Any) -> LoadResult:
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=kw.pop("mode", LoadMode.APPEND)),
                    strategy="copy-csv", dsn=dsn)
    return LoadJob(spec, **kw).run()


def _count(conn: psycopg.Connection[Any], table: str, what: str = "count(*)") -> int:
    row = conn.execute(sql.SQL("SELECT " + what + " FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


def _branches(conn: psycopg.Connection[Any], table: str) -> int:
    return _count(conn, table, "count(DISTINCT xmin::text)")


def _two_phase(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT current_setting('max_prepared_transactions')::int > 0").fetchone() == (True,)


def _nothing_prepared(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE '%c2x1aWNl%'").fetchone() == (0,)


class _BothBranches(script_split._Pieces):
    """The branches take turns (branch 1 first; a turn not taken within 0.2 s passes). A test's
    small block would otherwise go all to one branch while the other connects or waits for the
    GIL (the sharing doing its job), and the test wants both used."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.turn = 1
        self.turns = threading.Condition()

    def take(self, i: int) -> tuple[int, int] | None:
        with self.turns:
            self.turns.wait_for(lambda: self.turn == i, timeout=0.2)
            piece = super().take(i)
            self.turn = 1 - i
            self.turns.notify_all()
        return piece


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(script_split, "SPLIT_BYTES", 4096)
    monkeypatch.setattr(script_split, "PIECE_BYTES", 2048)  # dozens of pieces per branch
    monkeypatch.setattr(script_split, "_Pieces", _BothBranches)


@pytest.mark.parametrize("order", ["alternate", "branch 0 alone", "branch 1 alone", "branch 1 late"])
def test_pieces_cover_the_block_once_in_whole_rows(order: str, tmp_path: Path) -> None:
    import mmap

    data = b"head\n" + b"".join(f"{i}\t{'x' * (i % 37)}\n".encode() for i in range(2000)) + b"tail"
    path = tmp_path / "block"
    path.write_bytes(data)
    lo, hi = 5, len(data) - 4
    cut = data.index(b"\n", (lo + hi) // 2) + 1
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pieces = script_split._Pieces(mm, lo, cut, hi, 300)
        turns = {"alternate": [0, 1] * 10_000, "branch 0 alone": [0] * 20_000, "branch 1 alone": [1] * 20_000,
                 "branch 1 late": [0] * 20 + [0, 1] * 10_000}[order]
        taken: list[tuple[int, int]] = []
        for i in turns:
            piece = pieces.take(i)
            if piece is not None:
                taken.append(piece)
        assert pieces.take(0) is None and pieces.take(1) is None
    taken.sort()
    assert taken[0][0] == lo and taken[-1][1] == hi
    assert all(a[1] == b[0] for a, b in zip(taken, taken[1:]))  # no gap, no overlap
    assert all(data[a - 1 : a] == b"\n" and data[b - 1 : b] == b"\n" for a, b in taken)  # whole rows


@pytest.fixture
def split_server(embedded_dsn: str) -> str:
    with psycopg.connect(embedded_dsn) as c:
        if not _two_phase(c):
            pytest.skip("the embedded server has no two-phase commit")
    return embedded_dsn


@pytest.fixture
def econn(split_server: str) -> Any:
    with psycopg.connect(split_server, autocommit=True) as c:
        yield c


def _table(conn: psycopg.Connection[Any], made: list[str], prefix: str) -> str:
    import uuid

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL(DDL).format(sql.Identifier(name)))
    made.append(name)
    return name


@pytest.fixture
def tables(econn: psycopg.Connection[Any]) -> Any:
    made: list[str] = []
    yield lambda prefix="t": _table(econn, made, prefix)
    for name in reversed(made):
        econn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.mark.usefixtures("small_split")
def test_a_big_block_loads_exactly_over_two_branches(
    split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
    connections_opened: Callable[[], AbstractContextManager[list[psycopg.Connection[Any]]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    split, one = tables("split"), tables("one")
    rows = [_row(i) for i in range(1, ROWS + 1)]
    with connections_opened() as opened:
        result = _load(split_server, _dump(tmp_path, split, rows), split)
    # The job's control connection, the two branches, and the lock that keeps the janitor off the group.
    assert len(opened) == 4 and all(c.closed for c in opened)
    assert result.rows_loaded == result.rows_read == ROWS
    assert "two branches of a two-phase commit" in result.reason
    assert _branches(econn, split) == 2
    monkeypatch.setattr(script_split, "SPLIT_BYTES", 1 << 40)
    assert _load(split_server, _dump(tmp_path, one, rows, "one.sql"), one).reason == ""
    assert _branches(econn, one) == 1
    same = sql.SQL("SELECT count(*) FROM ((TABLE {a} EXCEPT ALL TABLE {b}) UNION ALL (TABLE {b} EXCEPT ALL TABLE {a})) x")
    assert econn.execute(same.format(a=sql.Identifier(split), b=sql.Identifier(one))).fetchone() == (0,)
    assert _nothing_prepared(econn)


@pytest.mark.usefixtures("small_split")
@pytest.mark.parametrize("bad", [100, ROWS // 2 + 100, ROWS - 5])  # branch 0's half, branch 1's, its end
def test_a_bad_row_in_either_half_names_its_line_and_loads_nothing(
    bad: int, split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
) -> None:
    t = tables("bad")
    rows = [_row(i) for i in range(1, ROWS + 1)]
    rows[bad - 1] = f"{bad}\tfine\tnot a time\n"
    with pytest.raises(BadRowError) as err:
        _load(split_server, _dump(tmp_path, t, rows), t)
    assert err.value.problem.line == 7 + bad  # the COPY line is 7, row i on line 7 + i
    assert err.value.problem.row == bad - 1
    assert "not a time" in err.value.problem.reason
    assert _count(econn, t) == 0 and _nothing_prepared(econn)


class _Stealing(script_split._Pieces):
    """Branch 1 takes its first piece, then waits until branch 0 has taken one of its half's."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.stolen = threading.Event()
        self.calls = 0

    def take(self, i: int) -> tuple[int, int] | None:
        if i == 1:
            self.calls += 1
            if self.calls > 1:
                self.stolen.wait(5)
        elif self.left[0][0] < self.left[0][1]:
            return super().take(0)  # still its own half
        piece = super().take(i)
        if i == 0 and piece is not None:
            self.stolen.set()
        return piece


@pytest.mark.usefixtures("small_split")
def test_a_bad_row_in_a_piece_taken_from_the_other_half_names_its_line(
    split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(script_split, "_Pieces", _Stealing)
    t = tables("stolen")
    rows = [_row(i) for i in range(1, ROWS + 1)]
    rows[ROWS - 6] = f"{ROWS - 5}\tfine\tnot a time\n"  # in the last piece, the first one branch 0 takes
    with pytest.raises(BadRowError) as err:
        _load(split_server, _dump(tmp_path, t, rows), t)
    assert (err.value.problem.line, err.value.problem.row) == (7 + ROWS - 5, ROWS - 6)
    assert _count(econn, t) == 0 and _nothing_prepared(econn)


@pytest.mark.usefixtures("small_split")
def test_cancel_during_a_split_block_leaves_the_table_as_it_was(
    split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = tables("cancel")
    econn.execute(sql.SQL("INSERT INTO {} VALUES (0, 'kept', NULL)").format(sql.Identifier(t)))
    monkeypatch.setattr(script_split, "PIECE_BYTES", 1024)  # many writes per branch
    monkeypatch.setattr(run_context, "PROGRESS_EVERY_S", 0.0)
    token = CancelToken()
    seen: list[Progress] = []

    def progress(p: Progress) -> None:
        seen.append(p)
        if p.phase is Phase.LOADING and p.rows_read > 0:
            token.cancel()  # the block is under way on both branches

    with pytest.raises(Cancelled):
        _load(split_server, _dump(tmp_path, t, [_row(i) for i in range(1, 4 * ROWS)]), t,
              on_progress=progress, cancel=token)
    assert any(p.phase is Phase.CANCELLED for p in seen)
    assert _count(econn, t) == 1 and _nothing_prepared(econn)


@pytest.mark.usefixtures("small_split")
@pytest.mark.parametrize("case", ["child-has-fk", "parent-of-a-loaded-table", "truncate", "latin-1"])
def test_blocks_that_must_stay_on_one_connection(
    case: str, split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
) -> None:
    parent, child = tables("parent"), tables("child")
    if case != "truncate":  # else TRUNCATE refuses a referenced table
        econn.execute(sql.SQL("ALTER TABLE {} ADD FOREIGN KEY (id) REFERENCES {}").format(
            sql.Identifier(child), sql.Identifier(parent)))
    rows = [_row(i) for i in range(1, ROWS + 1)]
    mode, encoding = LoadMode.APPEND, None
    if case == "child-has-fk":  # its rows must see the parent's, loaded before on branch 0
        target = child
        path = _dump(tmp_path, child, rows, before=f"COPY public.{parent} (id, note, at) FROM stdin;\n{''.join(rows)}\\.\n\n")
    elif case == "parent-of-a-loaded-table":  # the child's checks, on branch 0, must see all its rows
        target = parent
        text = HEAD + f"COPY public.{parent} (id, note, at) FROM stdin;\n" + "".join(rows) + "\\.\n\n"
        text += f"COPY public.{child} (id, note, at) FROM stdin;\n" + "".join(rows[:10]) + "\\.\n"
        path = tmp_path / "dump.sql"
        path.write_text(text, encoding="utf-8")
    else:
        target = parent
        path = _dump(tmp_path, parent, [r.replace("🎉", "").replace("é", "e") for r in rows])
        if case == "truncate":  # the TRUNCATE's lock would keep the second branch out
            mode = LoadMode.TRUNCATE
        else:  # decoded piece by piece: not the file's own bytes
            encoding = "latin-1"
    spec = LoadSpec(SourceOptions(str(path), encoding=encoding), TargetSpec(parent, mode=mode),
                    strategy="copy-csv", dsn=split_server)
    result = LoadJob(spec).run()
    assert "two branches" not in result.reason
    assert _count(econn, target) == ROWS and _branches(econn, target) == 1


@pytest.mark.usefixtures("small_split")
def test_a_server_without_two_phase_commit_loads_on_one_connection(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    t = table_name("nosplit")
    conn.execute(sql.SQL(DDL).format(sql.Identifier(t)))
    result = _load(dsn, _dump(tmp_path, t, [_row(i) for i in range(1, ROWS + 1)]), t)
    assert result.rows_loaded == ROWS
    split = _two_phase(conn)  # the embedded server has it; the machine's (SLUICE_TEST_DSN) may not
    assert ("two branches" in result.reason) is split
    assert _branches(conn, t) == (2 if split else 1)


def test_a_big_script_whose_blocks_are_small_commits_its_one_branch(
    split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A script too big to keep its chunks does not say its blocks' sizes before the load: branch 0
    starts as a two-phase branch in case, and with no block to split it commits alone."""
    from core.two_phase import TwoPhaseGroup

    monkeypatch.setattr(script_split, "CACHE_LIMIT", 0)
    committed: list[int] = []
    real = TwoPhaseGroup.commit

    def commit(self: TwoPhaseGroup) -> None:
        committed.append(len(self.branches))
        real(self)

    monkeypatch.setattr(TwoPhaseGroup, "commit", commit)
    t = tables("uncached")
    result = _load(split_server, _dump(tmp_path, t, [_row(i) for i in range(1, ROWS + 1)]), t)
    assert result.rows_loaded == ROWS and result.reason == "" and committed == [1]
    assert _branches(econn, t) == 1 and _nothing_prepared(econn)


@pytest.mark.usefixtures("small_split")
def test_a_user_who_cannot_write_the_commit_decision_loads_on_one_connection(
    split_server: str, econn: psycopg.Connection[Any], tables: Callable[..., str], tmp_path: Path,
) -> None:
    import uuid

    from psycopg.conninfo import make_conninfo

    t = tables("noddl")
    role = f"sluice_loader_{uuid.uuid4().hex[:8]}"
    econn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        econn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))  # so since PostgreSQL 15
        econn.execute(sql.SQL("GRANT SELECT, INSERT ON {} TO {}").format(sql.Identifier(t), sql.Identifier(role)))
        result = _load(make_conninfo(split_server, user=role),
                       _dump(tmp_path, t, [_row(i) for i in range(1, ROWS + 1)]), t)
        assert result.rows_loaded == ROWS and result.reason == ""
        assert _branches(econn, t) == 1
    finally:
        econn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        econn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
