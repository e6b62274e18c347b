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
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    options.format = fmt
    _check(options, fmt)
    if fmt in ("csv", "tsv"):
        from core.sources.csv.source import CsvSource

        return CsvSource(options, tsv=fmt == "tsv")
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


def _check(options: SourceOptions, fmt: str) -> None:
    """Options that cannot mean anything for this file, refused before it is read."""
    if options.sheet and fmt != "excel":
        raise ConfigError(f"a sheet ({options.sheet!r}) is for Excel files; this one is {fmt}")
    if fmt not in ("csv", "tsv"):
        return
    if options.delimiter is not None and len(options.delimiter) != 1:
        raise ConfigError(f"the delimiter must be one character, not {options.delimiter!r}")
    if options.quote is not None and len(options.quote) > 1:
        raise ConfigError(f"the quote must be one character, not {options.quote!r}")
