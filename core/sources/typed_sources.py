"""Sources whose files carry types: Parquet, Arrow IPC, JSON/NDJSON and Excel."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from core.errors import SourceError
from core.sources.base import Batch, Source, rebatch
from core.spec import SourceOptions

SCAN_ROWS = 100_000


class _LazySource(Source):
    """A file polars can scan lazily and hand over in bounded batches."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        try:
            self._schema = dict(self._scan().collect_schema())
        except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
            raise SourceError(f"cannot read it as {self.format}: {exc}", path=str(self.path)) from None

    def _scan(self) -> pl.LazyFrame:
        raise NotImplementedError

    def columns(self) -> list[str]:
        return list(self._schema)

    def dtypes(self) -> dict[str, pl.DataType]:
        return dict(self._schema)

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        def frames() -> Iterator[tuple[pl.DataFrame, int]]:
            lf = self._scan()
            if skip_rows:
                lf = lf.slice(skip_rows)
            done = skip_rows
            total = self._row_estimate()
            try:
                for frame in lf.collect_batches(chunk_size=max(batch_rows, 1)):
                    done += frame.height
                    yield frame, int(self.size * min(1.0, done / total)) if total else 0
            except (pl.exceptions.PolarsError, OSError) as exc:
                raise SourceError(f"cannot read it as {self.format}: {exc}", path=str(self.path)) from None

        # rebatch sees the frames after the skip; its row numbers must still be the source's.
        for batch in rebatch(frames(), batch_rows, 0):
            yield Batch(batch.frame, batch.first_row + skip_rows, batch.bytes_read)

    def _row_estimate(self) -> int:
        try:
            return int(self._scan().select(pl.len()).collect().item())
        except pl.exceptions.PolarsError:
            return 0

    def locate(self, row: int) -> tuple[int | None, str | None]:
        return None, None


class _CountedSource(_LazySource):
    """A format whose file says how many rows it holds (Parquet's footer, Arrow IPC's record batches)."""

    def known_rows(self) -> int | None:
        try:
            return int(self._scan().select(pl.len()).collect().item())
        except (pl.exceptions.PolarsError, OSError):
            return None


class ParquetSource(_CountedSource):
    format = "parquet"

    def _scan(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path)


class ArrowSource(_CountedSource):
    format = "arrow"

    def _scan(self) -> pl.LazyFrame:
        return pl.scan_ipc(self.path)


class NdjsonSource(_LazySource):
    format = "ndjson"

    def _scan(self) -> pl.LazyFrame:
        return pl.scan_ndjson(self.path, infer_schema_length=1000)

    def locate(self, row: int) -> tuple[int | None, str | None]:
        # One object per line, blank lines aside.
        try:
            with open(self.path, encoding="utf-8-sig") as f:
                index = 0
                for n, line in enumerate(f, start=1):
                    if not line.strip():
                        continue
                    if index == row:
                        return n, line.rstrip("\r\n")
                    index += 1
        except (OSError, UnicodeError):
            pass
        return None, None


class _EagerSource(Source):
    """Formats polars reads whole (a JSON array, an Excel sheet): sliced after reading."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        try:
            self._frame = self._read()
        except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
            raise SourceError(f"cannot read it as {self.format}: {exc}", path=str(self.path)) from None
        except Exception as exc:  # noqa: BLE001 - fastexcel raises its own exception types
            raise SourceError(f"cannot read it as {self.format}: {exc}", path=str(self.path)) from None

    def _read(self) -> pl.DataFrame:
        raise NotImplementedError

    def columns(self) -> list[str]:
        return list(self._frame.columns)

    def dtypes(self) -> dict[str, pl.DataType]:
        return dict(self._frame.schema)

    def known_rows(self) -> int | None:
        return self._frame.height

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        total = self._frame.height
        for start in range(skip_rows, total, max(batch_rows, 1)):
            part = self._frame.slice(start, batch_rows)
            yield Batch(part, start, int(self.size * (start + part.height) / total))


class JsonSource(_EagerSource):
    format = "json"

    def _read(self) -> pl.DataFrame:
        return pl.read_json(self.path, infer_schema_length=1000)


class ExcelSource(_EagerSource):
    format = "excel"

    def _read(self) -> pl.DataFrame:
        sheet = self.options.sheet
        header = self.options.header is not False
        return pl.read_excel(self.path, sheet_name=sheet, engine="calamine", has_header=header)

    def locate(self, row: int) -> tuple[int | None, str | None]:
        # Spreadsheet rows: the header is row 1.
        return row + (2 if self.options.header is not False else 1), None
