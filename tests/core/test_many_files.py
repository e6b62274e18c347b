"""Many files, one table (issue 26 item 6): a folder, a glob or a list of files, generated here
in each format, load into one table in one transaction or file by file, each file counted."""

from __future__ import annotations

import csv
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql

from core.errors import BadRowError, ConfigError, SluiceError, UnfinishedRun
from core.job import LoadJob
from core.many_files import EachFileJob, make_job
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec


def _frame(month: int, rows: int, seed: int) -> pl.DataFrame:
    rnd = random.Random(seed)
    return pl.DataFrame({
        "id": [month * 100_000 + i for i in range(rows)],
        "day": [f"2024-{month:02d}-{rnd.randint(1, 28):02d}" for _ in range(rows)],
        "amount": [f"{rnd.randint(-99999, 99999) / 100:.2f}" for _ in range(rows)],
        "note": [rnd.choice(["plain", "a, comma", 'a "quote"', "two\nlines", "", "ünïcode"]) for _ in range(rows)],
    })


def _write(frame: pl.DataFrame, path: Path) -> None:
    kind = path.suffix
    if kind == ".csv":
        frame.write_csv(path)
    elif kind == ".tsv":
        frame.with_columns(pl.col("note").str.replace_all("\n", " ")).write_csv(path, separator="\t", quote_style="never")
    elif kind == ".parquet":
        frame.write_parquet(path)
    elif kind == ".ndjson":
        frame.write_ndjson(path)
    else:
        raise AssertionError(kind)


def _months(folder: Path, kind: str, sizes: list[int], seed: int = 1) -> list[pl.DataFrame]:
    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for m, rows in enumerate(sizes, start=1):
        f = _frame(m, rows, seed * 100 + m)
        # file2 before file10: names whose numbers sort by value
        _write(f, folder / f"export-{m}{kind}")
        frames.append(f)
    return frames


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, day::text, amount::text, coalesce(note, '') FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()


def _expected(frames: list[pl.DataFrame]) -> list[tuple[Any, ...]]:
    whole = pl.concat(frames)
    if whole["note"].dtype == pl.String:
        whole = whole.with_columns(pl.col("note").fill_null(""))
    return sorted((int(r[0]), r[1], f"{float(r[2]):.2f}", r[3]) for r in whole.rows())


def _spec(path: str, table: str, dsn: str, **kw: Any) -> LoadSpec:
    mode = kw.pop("mode", LoadMode.CREATE)
    return LoadSpec(SourceOptions(path), TargetSpec(table, mode=mode), dsn=dsn, **kw)


@pytest.mark.parametrize("kind", [".csv", ".tsv", ".parquet", ".ndjson"])
def test_a_glob_loads_every_file_into_one_table_each_counted(
    kind: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    sizes = [random.Random(kind).randint(50, 400) for _ in range(11)]
    frames = _months(tmp_path / "exports", kind, sizes)
    (tmp_path / "exports" / "README.md").write_text("not data")
    table = table_name("many")
    result = LoadJob(_spec(str(tmp_path / "exports" / f"*{kind}"), table, dsn)).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (sum(sizes),) * 2 + (0,)
    got = _rows(conn, table)
    if kind == ".tsv":
        frames = [f.with_columns(pl.col("note").str.replace_all("\n", " ")) for f in frames]
    assert [(r[0], r[1], f"{float(r[2]):.2f}", r[3]) for r in got] == _expected(frames)
    # each file named, in name order with numbers by value (export-2 before export-10)
    assert [Path(f["file"]).name for f in result.files] == [f"export-{m}{kind}" for m in range(1, 12)]
    assert [f["rows_read"] for f in result.files] == sizes
    assert [f["rows_loaded"] for f in result.files] == sizes


def test_a_folder_and_a_list_load_too(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    frames = _months(tmp_path / "f", ".csv", [30, 40, 50])
    table = table_name("folder")
    logs: list[str] = []
    result = LoadJob(_spec(str(tmp_path / "f"), table, dsn), on_log=logs.append).run()
    assert [f["rows_read"] for f in result.files] == [30, 40, 50]
    assert any("3 files" in m and "one transaction" in m for m in logs)
    assert any(m.endswith("export-2.csv: 40 rows read, 40 loaded") for m in logs)
    table2 = table_name("list")
    listed = ":".join(str(tmp_path / "f" / n) for n in ("export-3.csv", "export-1.csv"))
    result = LoadJob(_spec(listed, table2, dsn)).run()
    assert [Path(f["file"]).name for f in result.files] == ["export-3.csv", "export-1.csv"]
    assert len(_rows(conn, table2)) == 80 and len(_rows(conn, table)) == sum(f.height for f in frames)


def test_a_file_whose_columns_differ_is_refused_before_anything_is_sent(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    _months(tmp_path / "m", ".csv", [20, 20, 20, 20])
    odd = tmp_path / "m" / "export-3.csv"
    pl.read_csv(odd).rename({"note": "memo"}).with_columns(extra=pl.lit(1)).write_csv(odd)
    table = table_name("refused")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric, note text)").format(sql.Identifier(table)))
    with pytest.raises(ConfigError) as err:
        LoadJob(_spec(str(tmp_path / "m" / "*.csv"), table, dsn, mode=LoadMode.APPEND)).run()
    text = str(err.value)
    assert "export-3.csv" in text and "'note'" in text and "'memo'" in text and "'extra'" in text
    assert "nothing was sent" in text
    assert _rows(conn, table) == []
    # a reordered file has the same columns: taken by name
    _months(tmp_path / "m", ".csv", [20, 20, 20, 20])
    moved = pl.read_csv(odd)
    moved.select(["note", "amount", "id", "day"]).write_csv(odd)
    logs: list[str] = []
    result = LoadJob(_spec(str(tmp_path / "m" / "*.csv"), table, dsn, mode=LoadMode.APPEND), on_log=logs.append).run()
    assert result.rows_loaded == 80 and any("another order in export-3.csv" in m for m in logs)
    assert (3 * 100_000 + 5,) in [(r[0],) for r in _rows(conn, table)]
    headless = tmp_path / "m" / "export-4.csv"
    headless.write_text(headless.read_text().split("\n", 1)[1])  # its header line lost
    with pytest.raises(ConfigError, match=r"export-4.csv: .* has none of its columns: its first line reads 400000"
                                          r".*a file without a header line"):
        LoadJob(_spec(str(tmp_path / "m" / "*.csv"), table, dsn, mode=LoadMode.APPEND)).run()


def test_one_transaction_a_bad_row_in_the_third_file_loads_nothing_and_names_that_file(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    _months(tmp_path / "b", ".csv", [100, 100, 100])
    bad = tmp_path / "b" / "export-3.csv"
    frame = pl.read_csv(bad)
    assert frame.height == 100
    table = table_name("onetx")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric, note text)").format(sql.Identifier(table)))
    target_row = 41  # the 42nd record of the third file
    rows = frame.rows()
    rows[target_row] = (rows[target_row][0], "not a date", rows[target_row][2], rows[target_row][3])
    pl.DataFrame(rows, schema=frame.columns, orient="row").write_csv(bad)
    line = 2 + target_row + sum(r[3].count("\n") for r in rows[:target_row])  # header, rows, quoted newlines
    for strategy in ("copy-csv", "copy-binary", "executemany"):
        with pytest.raises(BadRowError) as err:
            LoadJob(_spec(str(tmp_path / "b"), table, dsn, mode=LoadMode.APPEND, strategy=strategy)).run()
        p = err.value.problem
        assert (Path(p.path).name, p.line, p.column, p.value) == ("export-3.csv", line, "day", "not a date"), strategy
        assert _rows(conn, table) == []


@pytest.mark.parametrize(("strategy", "commit"), [
    ("copy-csv", CommitMode.SINGLE), ("executemany", CommitMode.PER_BATCH), ("parallel-copy", CommitMode.PER_BATCH)])
def test_skip_counts_each_files_rejects_and_names_the_file_in_the_reject_file(
    strategy: str, commit: CommitMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    _months(tmp_path / "s", ".csv", [30, 30, 30])
    for name, ids in (("export-1.csv", [3]), ("export-3.csv", [0, 29])):
        p = tmp_path / "s" / name
        f = pl.read_csv(p)
        f = f.with_columns(pl.when(pl.int_range(pl.len()).is_in(ids)).then(pl.lit("nope")).otherwise(pl.col("amount"))
                           .alias("amount"))
        f.write_csv(p)
    table = table_name("skipmany")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric, note text)").format(sql.Identifier(table)))
    result = LoadJob(_spec(str(tmp_path / "s" / "*.csv"), table, dsn, mode=LoadMode.APPEND, strategy=strategy,
                           commit=commit, batch_rows=7, on_error=ErrorPolicy.SKIP)).run()
    assert [(f["rows_read"], f["rows_loaded"], f["rows_rejected"]) for f in result.files] == [
        (30, 29, 1), (30, 30, 0), (30, 28, 2)]
    assert result.reject_file is not None and "*" not in result.reject_file
    with open(result.reject_file, newline="", encoding="utf-8") as fh:
        recs = list(csv.DictReader(fh))
    assert sorted((Path(r["file"]).name, r["row"], r["column"]) for r in recs) == [
        ("export-1.csv", "4", "amount"), ("export-3.csv", "1", "amount"), ("export-3.csv", "30", "amount")]
    assert len(_rows(conn, table)) == 87


def test_per_file_commits_each_file_and_resume_goes_on_from_the_bad_one(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    frames = _months(tmp_path / "p", ".csv", [40, 50, 60, 70])
    glob = str(tmp_path / "p" / "*.csv")
    made = table_name("perfile_new")  # create mode: the first file makes the table, the others append
    result = make_job(_spec(glob, made, dsn, commit=CommitMode.PER_FILE)).run()
    assert [f["rows_loaded"] for f in result.files] == [40, 50, 60, 70] and len(_rows(conn, made)) == 220
    bad = tmp_path / "p" / "export-3.csv"
    good = bad.read_bytes()
    bad.write_text(bad.read_text().replace(f"\n{3 * 100_000 + 7},", "\nseven,", 1))
    assert bad.read_bytes() != good
    table = table_name("perfile")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric, note text)").format(sql.Identifier(table)))
    spec = _spec(glob, table, dsn, commit=CommitMode.PER_FILE, mode=LoadMode.APPEND)
    job = make_job(spec)
    assert isinstance(job, EachFileJob)
    with pytest.raises(SluiceError):
        job.run()
    assert len(_rows(conn, table)) == 90  # files 1 and 2 committed; 3 rolled back alone
    with pytest.raises(UnfinishedRun):
        make_job(spec).run()  # neither --resume nor --restart: said, not guessed
    with pytest.raises(SluiceError, match="the 2 files before it stay loaded"):
        make_job(spec, restart=True).run()  # from the first file again: it and the second load twice
    assert len(_rows(conn, table)) == 180
    conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
    with pytest.raises(SluiceError):
        make_job(spec, restart=True).run()
    assert len(_rows(conn, table)) == 90
    bad.write_bytes(good)
    logs: list[str] = []
    result = make_job(spec, resume=True, on_log=logs.append).run()
    assert sorted(r[0] for r in _rows(conn, table)) == sorted(int(i) for f in frames for i in f["id"])
    assert [f.get("skipped", False) for f in result.files] == [True, True, False, False]
    assert [f["rows_read"] for f in result.files] == [40, 50, 60, 70]
    assert any("loaded by the earlier run" in m for m in logs)
    # finished: a new run starts from the first file again (append mode, so the rows double)
    again = make_job(spec).run()
    assert again.rows_loaded == 220 and len(_rows(conn, table)) == 440
    # truncate: the table is emptied once, with the first file, not before each one
    emptied = make_job(_spec(glob, table, dsn, commit=CommitMode.PER_FILE, mode=LoadMode.TRUNCATE)).run()
    assert emptied.rows_loaded == 220 and len(_rows(conn, table)) == 220


def test_per_batch_over_many_files_resumes_without_a_row_twice(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core import job as job_module
    from core.cancel import CancelToken
    from core.errors import Cancelled

    monkeypatch.setattr(job_module, "PROGRESS_EVERY_S", 0.0)  # progress after every batch
    _months(tmp_path / "r", ".csv", [300, 300, 300])
    table = table_name("resume")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, day date, amount numeric, note text)").format(
        sql.Identifier(table)))
    spec = _spec(str(tmp_path / "r"), table, dsn, mode=LoadMode.APPEND, commit=CommitMode.PER_BATCH,
                 strategy="copy-csv", batch_rows=100)
    token = CancelToken()

    def stop_midway(p: Any) -> None:
        if p.rows_loaded >= 400:
            token.cancel()

    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=stop_midway, cancel=token).run()
    part = len(_rows(conn, table))
    assert 400 <= part < 900  # stopped inside the second file
    with pytest.raises(UnfinishedRun):
        LoadJob(spec).run()
    third = tmp_path / "r" / "export-3.csv"
    kept, stat = third.read_bytes(), third.stat()
    third.write_bytes(kept + b"999999,2024-03-01,1.00,late\n")
    with pytest.raises(ConfigError, match="changed since the earlier run"):
        LoadJob(spec, resume=True).run()  # one file of the set changed: its rows cannot be matched
    third.write_bytes(kept)
    os.utime(third, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the very file again
    result = LoadJob(spec, resume=True).run()
    assert len(_rows(conn, table)) == 900  # the primary key refuses any row twice
    assert result.rows_loaded == 900


def test_empty_files_are_passed_over_and_said_and_a_ragged_row_is_named_by_its_file(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    from core.errors import SourceError

    folder = tmp_path / "e"
    _months(folder, ".csv", [10, 12, 14])
    (folder / "export-0.csv").write_bytes(b"")  # an empty month, written without a header
    (folder / "export-4.csv").write_text("id,day,amount,note\n")  # one written with its header only
    table = table_name("empties")
    logs: list[str] = []
    result = LoadJob(_spec(str(folder), table, dsn), on_log=logs.append).run()
    assert [(Path(f["file"]).name, f["rows_read"], f.get("empty", False)) for f in result.files] == [
        ("export-0.csv", 0, True), ("export-1.csv", 10, False), ("export-2.csv", 12, False),
        ("export-3.csv", 14, False), ("export-4.csv", 0, False)]
    assert any(m.endswith("export-0.csv: empty (0 bytes), passed over") for m in logs)
    assert len(_rows(conn, table)) == 36
    # a ragged record in the second file: abort names that file and its line; skip sets it aside, named
    second = folder / "export-2.csv"
    text = second.read_text()
    second.write_text(text + "1,2024-01-01\n")
    lines = text.count("\n") + 1
    with pytest.raises(SourceError) as err:
        LoadJob(_spec(str(folder), table, dsn, mode=LoadMode.APPEND)).run()
    assert err.value.path == str(second) and err.value.line == lines
    assert len(_rows(conn, table)) == 36
    skipped = LoadJob(_spec(str(folder), table, dsn, mode=LoadMode.APPEND, on_error=ErrorPolicy.SKIP)).run()
    assert [f["rows_rejected"] for f in skipped.files] == [0, 0, 1, 0, 0]
    assert skipped.reject_file is not None
    with open(skipped.reject_file, newline="", encoding="utf-8") as fh:
        (rec,) = list(csv.DictReader(fh))
    assert (rec["file"], rec["line"]) == (str(second), str(lines))


def test_the_compare_lab_counts_many_files(dsn: str, tmp_path: Path) -> None:
    from core.compare import _row_count

    _months(tmp_path / "c", ".csv", [7, 8])
    assert _row_count(_spec(str(tmp_path / "c" / "*.csv"), "t", dsn)) == 15


PG_TYPES = """CREATE TABLE {} (id int PRIMARY KEY, t text, n numeric(20,6), ts timestamptz, d date, iv interval,
    arr text[], js jsonb, b bytea, ok boolean)"""
PG_ROWS = """INSERT INTO {} SELECT i,
    CASE i % 7 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN E'two\\nlines, "quoted"' WHEN 3 THEN E'tab\\there \\\\ back'
                WHEN 4 THEN 'NA' WHEN 5 THEN 'ünï' ELSE 'plain ' || i END,
    CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 1234.567891 - 50000)::numeric(20,6) END,
    timestamptz '2024-03-31 01:30:00+00' + i * interval '7 hours 3 minutes',
    date '1999-12-31' + i, make_interval(days => i % 40, secs => i * 1.5),
    CASE WHEN i % 4 = 0 THEN NULL ELSE ARRAY['a,b', 'c"d', NULL, E'e\\\\f', ''] END,
    CASE WHEN i % 6 = 0 THEN NULL ELSE jsonb_build_object('k', i, 's', 'x"y', 'a', jsonb_build_array(1, 'two')) END,
    CASE WHEN i % 3 = 0 THEN NULL ELSE decode(md5(i::text), 'hex') END,
    CASE WHEN i % 9 = 0 THEN NULL ELSE i % 2 = 0 END
    FROM generate_series(1, 900) i"""


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary", "unnest", "executemany"])
def test_postgresqls_own_copy_to_csv_files_load_back_identically(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Three files written by the server's own COPY ... TO (FORMAT csv, HEADER), one per part of a
    table, load back into a table like it: every value the same, NULL and empty text apart."""
    src, dst = table_name("pgsrc"), table_name("pgdst")
    conn.execute(sql.SQL(PG_TYPES).format(sql.Identifier(src)))
    conn.execute(sql.SQL(PG_ROWS).format(sql.Identifier(src)))
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(dst), sql.Identifier(src)))
    folder = tmp_path / "dump"
    folder.mkdir()
    for k in range(3):
        with open(folder / f"part-{k}.csv", "wb") as f, conn.cursor().copy(sql.SQL(
                "COPY (SELECT * FROM {} WHERE id % 3 = {} ORDER BY id) TO STDOUT (FORMAT csv, HEADER)").format(
                sql.Identifier(src), sql.Literal(k))) as copy:
            for data in copy:
                f.write(data)
    result = LoadJob(_spec(str(folder / "*.csv"), dst, dsn, mode=LoadMode.APPEND, strategy=strategy)).run()
    assert [f["rows_loaded"] for f in result.files] == [300, 300, 300]
    for a, b in ((src, dst), (dst, src)):
        left = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT * FROM {} EXCEPT ALL SELECT * FROM {}) x").format(
            sql.Identifier(a), sql.Identifier(b))).fetchone()
        assert left == (0,), (a, b)
    made = table_name("pgnew")  # create mode: a new table with the same text of every value
    LoadJob(_spec(str(folder), made, dsn, strategy=strategy)).run()
    diff = conn.execute(sql.SQL(
        "SELECT count(*) FROM (SELECT id, t, n::text, ts::text, d::text, iv::text, arr::text, js::text, b::text, "
        "ok::text FROM {} EXCEPT ALL SELECT id::int, t, n::text, ts::text, d::text, iv::text, arr::text, js::text, "
        "b::text, ok::text FROM {}) x").format(sql.Identifier(src), sql.Identifier(made))).fetchone()
    assert diff == (0,)


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "parallel-copy", "copy-binary"])
def test_files_written_differently_load_as_one(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """LF, CRLF, a BOM and Latin-1 in one set: COPY takes one line-ending style per statement, so the
    files' own bytes give way to the parser where they must; every value arrives, each file counted."""
    frames = _months(tmp_path / "w", ".csv", [60, 70, 80, 90])
    folder = tmp_path / "w"
    crlf = folder / "export-2.csv"
    crlf.write_bytes(crlf.read_bytes().replace(b'"\n', b'"\r\n').replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n"))
    bom = folder / "export-3.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + bom.read_bytes())
    latin = folder / "export-4.csv"
    latin.write_bytes(latin.read_text(encoding="utf-8").encode("latin-1"))
    table = table_name("written")
    result = LoadJob(_spec(str(folder / "export-*.csv"), table, dsn, strategy=strategy, workers=2)).run()
    assert [f["rows_read"] for f in result.files] == [60, 70, 80, 90]
    got = _rows(conn, table)
    want = _expected(frames)
    # a CRLF file's quoted line breaks are CRLF too: that is its text
    crlf_ids = set(frames[1]["id"].to_list())
    assert [(r[0], r[1], f"{float(r[2]):.2f}", r[3].replace("\r\n", "\n") if r[0] in crlf_ids else r[3])
            for r in got] == want


@pytest.mark.parametrize("commit", [CommitMode.SINGLE, CommitMode.PER_BATCH])
@pytest.mark.parametrize("strategy", ["copy-csv", "parallel-copy", "copy-binary", "pipeline", "multirow-values"])
def test_every_strategy_and_commit_loads_a_set_each_file_counted(
    strategy: str, commit: CommitMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    sizes = [333, 1, 250, 417]
    frames = _months(tmp_path / "all", ".csv", sizes, seed=7)
    table = table_name("every")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, day date, amount numeric, note text)").format(
        sql.Identifier(table)))
    result = LoadJob(_spec(str(tmp_path / "all"), table, dsn, mode=LoadMode.APPEND, strategy=strategy, commit=commit,
                           batch_rows=100, workers=3)).run()
    assert [f["rows_read"] for f in result.files] == sizes and result.rows_loaded == sum(sizes)
    assert [(r[0], r[1], f"{float(r[2]):.2f}", r[3]) for r in _rows(conn, table)] == _expected(frames)


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary", "parallel-copy"])
def test_a_relative_date_word_in_one_file_is_refused_and_named_by_that_file(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    from core.errors import RefusedValue

    _months(tmp_path / "rd", ".csv", [20, 20, 20])
    second = tmp_path / "rd" / "export-2.csv"
    frame = pl.read_csv(second)
    frame = frame.with_columns(pl.when(pl.int_range(pl.len()) == 4).then(pl.lit("yesterday")).otherwise("day")
                               .alias("day"))
    frame.write_csv(second)
    line = 2 + 4 + sum(n.count("\n") for n in frame["note"].to_list()[:4])
    table = table_name("reldate")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric, note text)").format(sql.Identifier(table)))
    spec = _spec(str(tmp_path / "rd"), table, dsn, mode=LoadMode.APPEND, strategy=strategy)
    with pytest.raises(RefusedValue) as err:
        LoadJob(spec).run()
    assert (err.value.path, err.value.line) == (str(second), line) and "yesterday" in str(err.value)
    assert _rows(conn, table) == []
    from dataclasses import replace

    result = LoadJob(replace(spec, on_error=ErrorPolicy.SKIP)).run()
    assert [f["rows_rejected"] for f in result.files] == [0, 1, 0] and len(_rows(conn, table)) == 59
    assert result.reject_file is not None
    with open(result.reject_file, newline="", encoding="utf-8") as fh:
        (rec,) = list(csv.DictReader(fh))
    assert (rec["file"], rec["line"], rec["value"]) == (str(second), str(line), "yesterday")


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany", "row-autocommit"])
def test_a_per_file_run_that_dies_just_after_a_files_commit_never_loads_it_twice(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file's mark is written in the transaction that commits its rows (row-autocommit: the
    staging table's move), so a run killed right after that commit resumes after that file."""
    _months(tmp_path / "k", ".csv", [15, 16, 17])
    table = table_name("killed")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, day date, amount numeric, note text)").format(
        sql.Identifier(table)))
    spec = _spec(str(tmp_path / "k"), table, dsn, mode=LoadMode.APPEND, strategy=strategy,
                 commit=CommitMode.PER_FILE)
    real_run = LoadJob.run

    def dies_after_the_second(self: LoadJob) -> Any:
        result = real_run(self)
        if self.spec.source.path.endswith("export-2.csv"):
            raise KeyboardInterrupt  # the process killed between the commit and anything after it
        return result

    monkeypatch.setattr(LoadJob, "run", dies_after_the_second)
    with pytest.raises(KeyboardInterrupt):
        make_job(spec).run()
    monkeypatch.setattr(LoadJob, "run", real_run)
    assert len(_rows(conn, table)) == 31
    result = make_job(spec, resume=True).run()  # the primary key would refuse the second file's rows again
    assert [f.get("skipped", False) for f in result.files] == [True, True, False]
    assert [f["rows_loaded"] for f in result.files] == [15, 16, 17] and len(_rows(conn, table)) == 48
