"""Truncate means truncate: the table is emptied exactly once per run, whatever the commit mode,
error policy or strategy, also for an empty source and a first record that is rejected; never
again on --resume."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.cancel import CancelToken
from core.errors import Cancelled, SluiceError
from core.events import Phase, Progress
from core.load import context as run_context
from core.load.job import LoadJob
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

TABLE = [c for c in all_strategies() if not c.script_only]
PER_BATCH = [c.id for c in TABLE if c.chunk_commits or (c.transactional and not c.multi_connection)]
COMBOS = [
    pytest.param(commit, policy, c.id, id=f"{commit}-{policy}-{c.id}")
    for commit in CommitMode
    for policy in ErrorPolicy
    for c in TABLE
    if commit is CommitMode.SINGLE or c.id in PER_BATCH
]
OLD = [(901, "old"), (902, "old")]

# name -> (file text, rows left in the table under skip; under abort, None when the load must fail)
FILES: dict[str, tuple[str, list[tuple[int, str]], list[tuple[int, str]] | None]] = {
    "plain": ("id,name\n1,a\n2,b\n3,c\n4,d\n5,e\n", [(i, c) for i, c in zip(range(1, 6), "abcde")],
              [(i, c) for i, c in zip(range(1, 6), "abcde")]),
    "empty": ("id,name\n", [], []),
    "first record malformed": ("id,name\n1,a,extra\n2,b\n3,c\n4,d\n", [(2, "b"), (3, "c"), (4, "d")], None),
    "first record refused": ("id,name\nx,a\n2,b\n3,c\n4,d\n", [(2, "b"), (3, "c"), (4, "d")], None),
}


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, name FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()


def _fill(conn: psycopg.Connection[Any], table: str) -> None:
    ident = sql.Identifier(table)
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ident))
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(ident))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (901, 'old'), (902, 'old')").format(ident))


@pytest.mark.parametrize(("commit", "policy", "strategy"), COMBOS)
def test_truncate_empties_the_table_once(
    commit: CommitMode, policy: ErrorPolicy, strategy: str,
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    for name, (text, skipped, aborted) in FILES.items():
        table = table_name("trunc")
        _fill(conn, table)
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        path.write_text(text, encoding="utf-8")
        spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), strategy=strategy,
                        batch_rows=2, dsn=dsn, commit=commit, on_error=policy,
                        reject_file=str(tmp_path / f"{name}.rejects.csv"))
        expected = skipped if policy is ErrorPolicy.SKIP else aborted
        if expected is None:
            with pytest.raises(SluiceError):
                LoadJob(spec).run()
            assert _rows(conn, table) == OLD, f"{name}: a failed first batch keeps the table as it was"
            continue
        result = LoadJob(spec).run()
        assert _rows(conn, table) == expected, name
        assert result.rows_loaded == len(expected), name


@pytest.mark.parametrize("strategy", PER_BATCH)
@pytest.mark.parametrize("policy", list(ErrorPolicy))
def test_resume_never_truncates_again(
    strategy: str, policy: ErrorPolicy, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_context, "PROGRESS_EVERY_S", 0.0)
    table = table_name("trres")
    _fill(conn, table)
    path = tmp_path / "r.csv"
    # Under skip the first record is malformed too, so the first batch starts at row 1.
    first = "0,zero,extra\n" if policy is ErrorPolicy.SKIP else "0,zero\n"
    path.write_text("id,name\n" + first + "".join(f"{i},n{i}\n" for i in range(1, 41)), encoding="utf-8")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), strategy=strategy,
                    batch_rows=5, dsn=dsn, commit=CommitMode.PER_BATCH, on_error=policy,
                    reject_file=str(tmp_path / "rej.csv"))
    token = CancelToken()

    def stop_midway(p: Progress) -> None:
        if p.phase is Phase.LOADING and p.rows_read >= 15:
            token.cancel()

    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=stop_midway, cancel=token).run()
    done = _rows(conn, table)
    assert done and all(r[0] < 900 for r in done), "the interrupted run truncated, then committed batches"
    result = LoadJob(spec, resume=True).run()
    want = [(i, f"n{i}") for i in range(1, 41)]
    if policy is ErrorPolicy.ABORT:
        want = [(0, "zero"), *want]
    assert _rows(conn, table) == want
    assert result.rows_loaded == len(want)
