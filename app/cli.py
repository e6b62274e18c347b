"""The headless commands: load, run, compare, strategies, server (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from app.progress_line import ProgressLine
from core.cancel import CancelToken
from core.errors import ConfigError, SluiceError
from core.spec import FORMATS, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec

HEADLESS = ("load", "run", "compare", "strategies", "server", "history")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high]."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < low or (high is not None and n > high):
            raise argparse.ArgumentTypeError(
                f"{n} is out of range: {low} or more" if high is None else f"{n} is out of range: {low} to {high}")
        return n

    return parse


# More streams than this only queue on the server's cores and use up its connections.
MAX_WORKERS = 32


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


MANY_FILES_HELP = (
    "the file to load; or many files with the same columns into one table: a folder, a quoted glob "
    "('exports/*.csv') or several files. They load in one transaction (--commit single, the default), "
    "each file in its own (--commit per-file: a bad file rolls back alone, --resume goes on from it) or "
    "batch by batch (--commit per-batch)"
)


def _source_args(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    if many:
        p.add_argument("source", nargs="+", help=MANY_FILES_HELP)
    else:
        p.add_argument("source", help="the file to load")
    p.add_argument("--format", choices=FORMATS)
    p.add_argument("--delimiter")
    p.add_argument("--quote")
    p.add_argument("--encoding")
    p.add_argument("--null", help="text that means NULL (e.g. NA or \\N)")
    p.add_argument("--no-header", action="store_true")
    p.add_argument("--sheet", help="Excel sheet name")
    p.add_argument("--column-format", action="append", default=[], metavar="COL=FORMAT",
                   help="how a column writes its values, e.g. order_date=MM/DD/YYYY, amount=1.234,56 "
                        "(repeat for more columns; COL= loads it as written)")
    p.add_argument("--table", help="target table, taken literally (for SQL scripts: overrides the script's table)")
    p.add_argument("--schema")
    p.add_argument(
        "--script-table", metavar="NAME",
        help="SQL scripts filling several tables: load only this one (schema.table or table); default: all",
    )
    p.add_argument("--dsn", help="libpq connection string; default: the embedded PostgreSQL")
    p.add_argument("--json", action="store_true", help="print one JSON object on the last line")


def _resume_args(p: argparse.ArgumentParser) -> None:
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true", help="continue an interrupted per-batch load")
    again.add_argument(
        "--restart", action="store_true", help="load from the first row although an earlier run is unfinished"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m app", description="Sluice: load files into PostgreSQL.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    load = sub.add_parser("load", help="load a file (or a folder, a glob, several files) into a table")
    _source_args(load, many=True)
    load.add_argument("--strategy", default="auto",
                      help="a strategy id (see `strategies`), or auto (the default): picks strategy, batch size "
                           "and workers from the file and the target, and says why")
    load.add_argument("--batch-rows", type=_at_least(1), help="rows per batch (default: about 8 MB of rows for "
                      "the COPY strategies, 10,000 rows for the others; auto picks its own)")
    load.add_argument("--workers", type=_at_least(1, MAX_WORKERS), default=2)
    load.add_argument("--mode", choices=[m.value for m in LoadMode], default="append")
    load.add_argument("--key", nargs="+", default=[], help="upsert key columns")
    load.add_argument("--commit", choices=[m.value for m in CommitMode], default="single",
                      help="single: all in one transaction (all files, when there are several); per-batch: each "
                           "batch commits with a checkpoint (--resume continues); per-file: with several files, "
                           "each file commits on its own")
    load.add_argument("--on-error", choices=[m.value for m in ErrorPolicy], default="abort")
    load.add_argument("--reject-file")
    load.add_argument("--reject-limit", type=_at_least(0))
    load.add_argument("--save-profile", metavar="P.toml")
    _resume_args(load)

    run = sub.add_parser("run", help="run an import profile")
    run.add_argument("profile")
    run.add_argument("--dsn")
    _resume_args(run)
    run.add_argument("--json", action="store_true")

    cmp_ = sub.add_parser("compare", help="compare strategies on this file, into a scratch table")
    _source_args(cmp_)
    cmp_.add_argument("--strategies", required=True, help="comma-separated strategy ids")
    cmp_.add_argument("--batch-rows", default="10000", help="comma-separated batch sizes")
    cmp_.add_argument("--workers", default="2", help="comma-separated worker counts (parallel-copy)")
    cmp_.add_argument("--repeat", type=_at_least(1), default=3)
    cmp_.add_argument("--rtt-ms", type=float, default=0.0, help="simulated network round trip")
    cmp_.add_argument("--sample-rows", type=_at_least(1), help="load only the first N rows")
    cmp_.add_argument("--budget-s", type=float, default=60.0, help="time budget per run")

    sub.add_parser("strategies", help="list the strategy ids")
    srv = sub.add_parser("server", help="the embedded PostgreSQL")
    srv.add_argument("action", choices=["start", "stop", "status"])
    from app.history_cli import add_parser

    add_parser(sub)
    return parser


def spec_from_args(a: argparse.Namespace) -> LoadSpec:
    if isinstance(a.source, list):  # load: one file, or several (a shell's expanded glob) as one list
        from core.sources.many import join_paths

        a.source = join_paths(a.source)
    src = SourceOptions(
        path=a.source,
        format=a.format,
        delimiter=_unescape(a.delimiter),
        quote=a.quote,
        header=False if a.no_header else None,
        encoding=a.encoding,
        null=a.null,
        sheet=a.sheet,
        script_table=getattr(a, "script_table", None),
        column_formats=_column_formats(getattr(a, "column_format", None)),
    )
    table = a.table
    is_sql = (a.format or "") == "sql" or (not a.format and a.source.lower().endswith(".sql"))
    if not table:
        if is_sql:
            table = _script_table(src)
        else:
            from core.sources.factory import open_source

            open_source(src)  # a file it cannot read (missing, compressed...) says so before --table is asked for
            raise ConfigError("--table is required")
    elif is_sql and not src.script_table:
        _one_script_table(src)
    return LoadSpec(
        source=src,
        target=TargetSpec(table=table[1], schema=a.schema or table[0])
        if isinstance(table, tuple)
        else TargetSpec(table=table, schema=a.schema),
        strategy=getattr(a, "strategy", "auto"),
        batch_rows=a.batch_rows if isinstance(a.batch_rows, int) else None,
        workers=a.workers if isinstance(a.workers, int) else 2,
        commit=CommitMode(getattr(a, "commit", "single")),
        on_error=ErrorPolicy(getattr(a, "on_error", "abort")),
        reject_file=getattr(a, "reject_file", None),
        reject_limit=getattr(a, "reject_limit", None),
        dsn=a.dsn,
    )


def _script_table(src: SourceOptions) -> tuple[str | None, str]:
    from core.sources.factory import open_source
    from core.sources.sqlscript.source import SqlScriptSource

    source = open_source(src)
    assert isinstance(source, SqlScriptSource)
    if source.several:
        print(f"{src.path}: {len(source.selected)} tables, each into its own table: "
              + ", ".join(t.describe() for t in source.selected), file=sys.stderr)
        return None, source.target.table  # each table keeps its own schema (unless --schema)
    return source.target.schema, source.target.table


def _warm_up() -> threading.Thread:
    """Import the engine on a helper thread while this one reads the source.

    Reading a SQL script (which names the table) is mostly polars work that lets go of
    the GIL, so the two overlap; cmd_load's own import then finds the modules loaded.
    """

    def run() -> None:
        try:
            import core.load.job  # noqa: F401
        except ImportError:
            pass  # the real import in cmd_load reports it

    thread = threading.Thread(target=run, name="sluice-warm-up", daemon=True)
    thread.start()
    return thread


def _one_script_table(src: SourceOptions) -> None:
    """--table names one table: a script that fills several must say which (read once, kept for the load)."""
    from core.sources.factory import open_source
    from core.sources.sqlscript.source import SqlScriptSource

    source = open_source(src)
    if isinstance(source, SqlScriptSource) and source.several:
        names = ", ".join(t.describe() for t in source.selected)
        raise ConfigError(
            f"the script fills {len(source.selected)} tables ({names}): pick the one for --table with "
            "--script-table, or leave --table out to load each into its own table"
        )


def _column_formats(items: list[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    from core.column_formats import parse_pairs

    return parse_pairs(items)


def _unescape(s: str | None) -> str | None:
    return {"\\t": "\t", "tab": "\t"}.get(s, s) if s else s


def _emit_json(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, default=str))


def cmd_load(
    spec: LoadSpec, as_json: bool, save_profile: str | None = None, *, resume: bool = False, restart: bool = False
) -> int:
    from app.history_cli import remember_error, remember_result
    from core import profile
    from core.many_files import make_job

    if spec.target.mode is LoadMode.UPSERT and not spec.target.key:
        raise ConfigError("--mode upsert needs --key COLUMN ...")
    if save_profile:
        profile.save(spec, save_profile)
        print(f"saved profile {save_profile}", file=sys.stderr)
    cancel = CancelToken()
    line = ProgressLine()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.cancel())
    job = make_job(spec, on_progress=line, on_log=line.log, cancel=cancel, resume=resume, restart=restart)
    try:
        result = job.run()
    except SluiceError as exc:
        line.end()
        remember_error(spec, job, exc)  # the window's History lists headless runs too
        raise
    finally:
        line.end()
        signal.signal(signal.SIGINT, previous)
    remember_result(spec, result)
    if result.resumed_from:
        print(f"resumed after {result.resumed_from:,} rows an earlier run had committed", file=sys.stderr)
    into = (f"{len(result.tables)} tables ({', '.join(result.tables)})" if len(result.tables) > 1
            else spec.target.table)
    if result.files:
        into += f" from {len(result.files)} files"
    print(
        f"loaded {result.rows_loaded:,} of {result.rows_read:,} rows into {into} "
        f"in {result.seconds:.2f} s ({result.rows_per_s:,.0f} rows/s) with {result.strategy}",
        file=sys.stderr,
    )
    if result.rows_dropped:
        print(f"{result.rows_dropped:,} rows dropped: their key was already in the table (ON CONFLICT DO NOTHING)",
              file=sys.stderr)
    if as_json:
        _emit_json(result.to_json())
    return EXIT_OK if result.rows_loaded > 0 or result.rows_read == 0 else EXIT_FAILED


def cmd_strategies() -> int:
    from core.strategies.catalogue import all_strategies

    print(f"{'auto':<20} picks the strategy, batch size and workers from the file and the target (default)")
    for cls in all_strategies():
        extra = " (SQL scripts only)" if cls.script_only else ""
        print(f"{cls.id:<20} {cls.summary}{extra}")
    return EXIT_OK


def cmd_server(action: str) -> int:
    from core.embedded import data_dir, embedded_uri, stop_embedded

    if action == "start":
        print(embedded_uri())
    elif action == "stop":
        print("stopped" if stop_embedded() else "not running")
    else:
        from core.embedded import connection_help, is_running

        running = is_running()
        print(f"{'running' if running else 'stopped'}: {data_dir() / 'pg'}")
        if running:
            for line in connection_help(embedded_uri()):
                print(line)
        else:
            print("`python -m app server start` starts it (any load or the window does too)")
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    as_json = bool(getattr(args, "json", False))
    try:
        if args.command == "strategies":
            return cmd_strategies()
        if args.command == "server":
            return cmd_server(args.action)
        if args.command == "history":
            from app.history_cli import cmd_history

            return cmd_history(args)
        if args.command == "load":
            warm = _warm_up()
            try:
                if args.batch_rows is not None and args.strategy == "auto":
                    print(f"note: auto picks its own batch size; --batch-rows {args.batch_rows:,} applies with "
                          "a named --strategy", file=sys.stderr)
                spec = spec_from_args(args)
                spec.target.mode = LoadMode(args.mode)
                spec.target.key = list(args.key)
                return cmd_load(spec, as_json, args.save_profile, resume=args.resume, restart=args.restart)
            finally:
                warm.join()
        if args.command == "run":
            from core import profile

            spec, _rest = profile.load(args.profile)
            if args.dsn:
                spec.dsn = args.dsn
            return cmd_load(spec, as_json, resume=args.resume, restart=args.restart)
        if args.command == "compare":
            from app.compare_cli import cmd_compare

            return int(cmd_compare(args, spec_from_args))
    except SluiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if as_json:
            _emit_json({"error": str(exc), "kind": type(exc).__name__})
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_USAGE
