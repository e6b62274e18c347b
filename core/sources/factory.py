"""Pick the reader for a file."""

from __future__ import annotations

from pathlib import Path

from core.errors import ConfigError, SourceError
from core.sources.base import Source
from core.spec import FORMATS, SourceOptions


def open_source(options: SourceOptions) -> Source:
    from core.sources.many import ManySource, is_many
    from core.sources.sniff import compressed, detect_format

    if is_many(options.path):  # a folder, a glob or a list of files: one source (core.sources.many)
        return ManySource(options, open_source)

    packed = compressed(options.path)
    if packed is not None:
        kind, tool = packed
        raise SourceError(f"the file is {kind}-compressed: expand it first ({tool} {Path(options.path).name})",
                          path=options.path)
    fmt = options.format
    if fmt is None:
        try:
            fmt = detect_format(options.path)
        except FileNotFoundError:
            raise SourceError("file not found", path=options.path) from None
        except OSError as exc:
            raise SourceError(f"cannot read the file: {exc.strerror}", path=options.path) from None
        fmt = _pgtext_or(fmt, options)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    options.format = fmt
    _check(options, fmt)
    if fmt in ("csv", "tsv", "pgtext"):
        from core.sources.empty import EmptySource, is_empty

        if is_empty(options.path):
            return EmptySource(options, fmt)
    if fmt in ("csv", "tsv"):
        from core.sources.csv.source import CsvSource

        return CsvSource(options, tsv=fmt == "tsv")
    if fmt == "pgtext":
        from core.sources.pgtext import PgTextSource

        return PgTextSource(options)
    if fmt == "sql":
        from core.sources.sqlscript.source import SqlScriptSource

        return SqlScriptSource(options)
    from core.sources import typed_sources as t

    cls: type[Source] = {  # type: ignore[type-abstract]
        "parquet": t.ParquetSource,
        "arrow": t.ArrowSource,
        "ndjson": t.NdjsonSource,
        "json": t.JsonSource,
        "excel": t.ExcelSource,
    }[fmt]
    return cls(options)


def _pgtext_or(fmt: str, options: SourceOptions) -> str:
    """A CSV/TSV-named file that shows PostgreSQL's text COPY format (tabs, \\N, backslash
    escapes) is read as that, unless a delimiter or quote said otherwise."""
    if fmt not in ("csv", "tsv") or options.delimiter not in (None, "\t") or options.quote is not None:
        return fmt
    from core.sources.pgtext_decode import looks_pgtext

    try:
        with open(options.path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return fmt
    return "pgtext" if looks_pgtext(head.removeprefix(b"\xef\xbb\xbf")) else fmt


def _check(options: SourceOptions, fmt: str) -> None:
    """Options that cannot mean anything for this file, refused before it is read."""
    if options.sheet and fmt != "excel":
        raise ConfigError(f"a sheet ({options.sheet!r}) is for Excel files; this one is {fmt}")
    if fmt == "pgtext" and options.quote:
        raise ConfigError("PostgreSQL's text format has no quote character (backslashes escape): leave the quote out")
    if fmt not in ("csv", "tsv", "pgtext"):
        return
    if options.delimiter is not None and len(options.delimiter) != 1:
        raise ConfigError(f"the delimiter must be one character, not {options.delimiter!r}")
    if options.quote is not None and len(options.quote) > 1:
        raise ConfigError(f"the quote must be one character, not {options.quote!r}")
