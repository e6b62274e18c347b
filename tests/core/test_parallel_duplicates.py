"""The same key in two chunks on two streams: the load ends (refused or isolated), never hangs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import SluiceError
from core.load.job import LoadJob
from core.spec import CommitMode, ErrorPolicy, LoadSpec, SourceOptions, TargetSpec


def _file(tmp_path: Path) -> Path:
    rows = [f"{i},r{i}" for i in range(1, 20_001)]
    rows[15_000] = "7,duplicate of row 7"  # far from row 7: another chunk, another stream
    path = tmp_path / "dup.csv"
    path.write_text("id,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("policy", list(ErrorPolicy))
@pytest.mark.parametrize("commit", list(CommitMode))
def test_a_key_repeated_across_streams_never_hangs(
    policy: ErrorPolicy, commit: CommitMode, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Streams that wait on each other give up after the lock timeout: 1 s here, not the load's 5 s.
    monkeypatch.setattr("core.load.protocols.chunked.STREAM_LOCK_TIMEOUT", "-c lock_timeout=1s")
    table = table_name("dup")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, name text)").format(sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(_file(tmp_path))), TargetSpec(table), strategy="parallel-copy", workers=2,
                    batch_rows=1000, dsn=dsn, commit=commit, on_error=policy,
                    reject_file=str(tmp_path / "rejects.csv"))
    count = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
    if policy is ErrorPolicy.ABORT:
        with pytest.raises(SluiceError, match="duplicate|same key"):
            LoadJob(spec).run()
        if commit is CommitMode.SINGLE:
            assert conn.execute(count).fetchone() == (0,)
        return
    try:
        result = LoadJob(spec).run()
    except SluiceError as exc:
        # One transaction per stream: when the two rows meet on different streams, neither can
        # go on; the load says so and leaves the table as it was (which stream gets which chunk
        # varies from run to run).
        # (per-file commits of one file are that file's one transaction, as single)
        assert commit in (CommitMode.SINGLE, CommitMode.PER_FILE) and "same key" in str(exc)  # noqa: PT017
        assert conn.execute(count).fetchone() == (0,)
        return
    assert (result.rows_loaded, result.rows_rejected) == (19_999, 1)
    assert conn.execute(count).fetchone() == (19_999,)
    assert "duplicate" in (tmp_path / "rejects.csv").read_text()
