"""What each column type costs the client to type and encode, against what binary COPY saves the server.

    python -m bench.column_costs [--rows N] [--dsn DSN] [--out FILE]

For each column of the corpus (bench/corpus.py), a two-column file (an id, and the column) of N
rows. Measured in CPU seconds, not wall time, so a busy machine does not blur them:

- client: this process's CPU (all its threads) to read the file, parse it, type the column and
  encode binary COPY tuples, as copy-binary does (core.sources.csv, core.strategies.arrow_binary);
- server csv / server binary: the server process's own CPU (/proc/PID/stat) to read the same rows
  with `COPY ... FROM` a file, as CSV and as its binary export, no client at all.

"saved" is server csv minus server binary: what binary COPY spares the server. Where the client's
cost is above it, sending that column as binary costs the machine more than it saves; with two
cores that is still worth it while the server, not the client, is the slower side. copy-binary's
balance (core.load.warm_start) gives the encoder only what it keeps up with, so the split follows
these costs on every file without a price list in auto.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import polars as pl
import psycopg
from psycopg import sql

from bench.corpus import DDL, _frame
from bench.corpus_bench import SHARED, _dsn

# (label, shape, column): one column of each kind the corpus holds.
COLUMNS = [
    ("bigint", "narrow", "b"),
    ("integer", "numeric", "qty"),
    ("numeric(12,2)", "numeric", "price"),
    ("boolean", "mixed", "active"),
    ("date (since 1900)", "temporal", "day"),
    ("timestamp (microseconds)", "temporal", "at"),
    ("timestamptz (mixed offsets)", "temporal", "at_tz"),
    ("text (words)", "wide_text", "a"),
    ("text (quoted: commas, quotes, newlines)", "quoted", "comment"),
    ("jsonb", "json", "doc"),
    ("double precision (2% 0.0)", "floats", "km"),
    ("real", "floats", "score"),
    ("uuid", "keys", "id"),
]


def _type_of(shape: str, column: str) -> str:
    """The column's type in the shape's DDL."""
    inner = DDL[shape].split("(", 1)[1].rsplit(")", 1)[0]
    for part in inner.split(", "):
        name, _, typ = part.partition(" ")
        if name == column:
            return typ
    raise KeyError(column)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_cost(path: Path, columns: list[str], types: list[str]) -> float:
    """CPU seconds to read, parse, type and encode the file as copy-binary does."""
    from core.sources.factory import open_source
    from core.spec import SourceOptions
    from core.strategies.arrow_binary import ArrowEncoder, arrow_columns

    cols = arrow_columns(columns, types)
    assert cols is not None, types
    encoder = ArrowEncoder(cols)
    source = open_source(SourceOptions(str(path)))
    start = _cpu()
    for batch in source.load_batches(50_000):
        assert encoder.encode(batch.frame) is not None
    return _cpu() - start


def server_costs(dsn: str, path: Path, ddl: str) -> tuple[float, float]:
    """The server's CPU seconds for COPY FROM the CSV file, and from its own binary export."""
    binary = SHARED / "column.bin"
    with psycopg.connect(dsn, autocommit=True) as c:
        pid = c.info.backend_pid
        c.execute("DROP TABLE IF EXISTS bench_column")
        c.execute(sql.SQL(ddl).format(sql.Identifier("bench_column")))  # DDL: fixed strings in bench/corpus.py
        c.execute("CHECKPOINT")
        t = _server_cpu(pid)
        c.execute(sql.SQL("COPY bench_column FROM {} (FORMAT csv, HEADER)").format(sql.Literal(str(path))))
        csv = _server_cpu(pid) - t
        binary.unlink(missing_ok=True)
        c.execute(sql.SQL("COPY bench_column TO {} (FORMAT binary)").format(sql.Literal(str(binary))))
        c.execute("TRUNCATE bench_column")
        c.execute("CHECKPOINT")
        t = _server_cpu(pid)
        c.execute(sql.SQL("COPY bench_column FROM {} (FORMAT binary)").format(sql.Literal(str(binary))))
        bin_s = _server_cpu(pid) - t
        c.execute("DROP TABLE bench_column")
    binary.unlink(missing_ok=True)
    return csv, bin_s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dsn", default=None, help="a DSN, or 'embedded'; default: the local server if it answers")
    ap.add_argument("--out", help="also write the table to this Markdown file")
    a = ap.parse_args()
    dsn = _dsn(a.dsn)
    SHARED.mkdir(parents=True, exist_ok=True)
    os.chmod(SHARED, 0o777)
    lines = [f"Per {a.rows:,} values (plus a bigint id), CPU seconds; `python -m bench.column_costs` "
             f"({time.strftime('%Y-%m-%d')}).", "",
             "| column | client: parse, type, encode | server: CSV | server: binary | saved by binary | "
             "client / saved |", "|---|---:|---:|---:|---:|---:|"]
    frames: dict[str, pl.DataFrame] = {}
    for label, shape, column in COLUMNS:
        print(label, file=sys.stderr, flush=True)
        frame = frames.get(shape)
        if frame is None:
            frame = frames[shape] = _frame(shape, a.rows)
        id_col = "a" if shape == "narrow" else "row" if column == "id" else "id"  # (keys: its id is the uuid)
        part = frame.with_row_index("row").select(id_col, column) if id_col == "row" else frame.select(id_col, column)
        path = SHARED / "column.csv"
        part.write_csv(path, datetime_format="%Y-%m-%d %H:%M:%S%.6f")
        os.chmod(path, 0o644)
        typ = _type_of(shape, column)
        ddl = f"CREATE TABLE {{}} ({id_col} bigint, {column} {typ})"
        canonical = {"timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone"}
        client = client_cost(path, [id_col, column], ["bigint", canonical.get(typ, typ)])
        csv, binary = server_costs(dsn, path, ddl)
        saved = csv - binary
        ratio = f"{client / saved:.1f}" if saved > 0.01 else "–"
        lines.append(f"| {label}: `{typ}` | {client:.2f} | {csv:.2f} | {binary:.2f} | {saved:.2f} | {ratio} |")
        path.unlink()
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
