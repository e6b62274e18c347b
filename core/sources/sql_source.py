"""SQL scripts of INSERT ... VALUES statements, parsed into rows and never executed."""

from __future__ import annotations

from collections.abc import Iterator

from core.errors import SourceError
from core.sources.base import Batch, Source
from core.sources.sqlscript_parser import InsertTarget, ParsedChunk, ScriptError, iter_script, validate_script
from core.spec import SourceOptions


class SqlScriptSource(Source):
    format = "sql"

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self.encoding = options.encoding or "utf-8"
        try:
            self.target, self.statements, self.rows = validate_script(str(self.path), encoding=self.encoding)
        except ScriptError as exc:
            raise SourceError(str(exc).removeprefix(f"line {exc.line}: "), path=str(self.path), line=exc.line) from None
        except (OSError, UnicodeError) as exc:
            raise SourceError(f"cannot read the file: {exc}", path=str(self.path)) from None
        self._columns = self._names(self.target)

    def _names(self, target: InsertTarget) -> list[str]:
        if target.columns:
            return list(target.columns)
        width = 0
        for chunk in iter_script(str(self.path), encoding=self.encoding, rows_per_chunk=1):
            width = chunk.frame.width
            break
        return [f"column_{i + 1}" for i in range(width)]

    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def has_column_list(self) -> bool:
        return bool(self.target.columns)

    def chunks(self, rows_per_chunk: int) -> Iterator[ParsedChunk]:
        try:
            yield from iter_script(str(self.path), encoding=self.encoding, rows_per_chunk=rows_per_chunk)
        except ScriptError as exc:
            raise SourceError(str(exc).removeprefix(f"line {exc.line}: "), path=str(self.path), line=exc.line) from None

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        row = 0
        for chunk in self.chunks(batch_rows):
            n = len(chunk.lines)
            if row + n <= skip_rows:
                row += n
                continue
            frame = chunk.frame.rename(dict(zip(chunk.frame.columns, self._columns)))
            lines = chunk.lines
            if row < skip_rows:
                cut = skip_rows - row
                frame, lines, row = frame.slice(cut), lines[cut:], skip_rows
            yield Batch(frame, row, chunk.bytes_end, lines)
            row += frame.height

    def locate(self, row: int) -> tuple[int | None, str | None]:
        seen = 0
        for chunk in self.chunks(10_000):
            n = len(chunk.lines)
            if seen + n > row:
                line = chunk.lines[row - seen]
                return line, _line_text(str(self.path), line, self.encoding)
            seen += n
        return None, None


def _line_text(path: str, line: int, encoding: str) -> str | None:
    try:
        with open(path, encoding=encoding, errors="replace") as f:
            for n, text in enumerate(f, start=1):
                if n == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None
