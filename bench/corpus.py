"""The benchmark corpus: file shapes that each stress a different cost, with the tables a user would give them.

Every shape is generated from a fixed seed (the same bytes every time) as a CSV with a header:

    narrow      two bigints: per-row overhead, nothing else
    wide_text   an id and three ~90-character texts: bytes, not values
    numeric     money with two decimals, numeric without scale, an integer
    temporal    dates since 1900, microsecond timestamps, timestamptz with mixed offsets (+05:30, -08:00)
    json        a nested jsonb document per row
    nulls       about half NULL (empty fields) and quoted empty strings, in text, int and date columns
    quoted      text with commas, quotes, newlines and emoji, quoted as CSV quotes it
    mixed       one of each of the above kinds of column, with about 2% NULLs
    floats      double precision and real, as pandas and R write them (shortest digits, some 0.0)
    keys        a uuid key, a boolean, a smallint and a short label

`mixed` also comes at 5M rows (`mixed5m`), the big load of issue 27.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

SHAPES = ("narrow", "wide_text", "numeric", "temporal", "json", "nulls", "quoted", "mixed", "floats", "keys")

DDL = {
    "narrow": "CREATE TABLE {} (a bigint, b bigint)",
    "wide_text": "CREATE TABLE {} (id bigint, a text, b text, c text)",
    "numeric": "CREATE TABLE {} (id bigint, price numeric(12,2), ratio numeric, qty integer)",
    "temporal": "CREATE TABLE {} (id bigint, day date, at timestamp, at_tz timestamptz)",
    "json": "CREATE TABLE {} (id bigint, doc jsonb)",
    "nulls": "CREATE TABLE {} (id bigint, label text, n integer, day date, note text)",
    "quoted": "CREATE TABLE {} (id bigint, name text, comment text)",
    "mixed": ("CREATE TABLE {} (id bigint, price numeric(12,2), name text, active boolean, born date, "
              "seen timestamp, seen_tz timestamptz, doc jsonb, note text)"),
    "floats": "CREATE TABLE {} (id bigint, lat double precision, lon double precision, score real, km double precision)",
    "keys": "CREATE TABLE {} (id uuid, ok boolean, n smallint, label text)",
}
DDL["mixed5m"] = DDL["mixed"]

_WORDS = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"])
_OFFSETS = np.array(["+00", "+05:30", "-08", "+09", "-03:30", "+01"])


def _words(rng: np.random.Generator, rows: int, count: int) -> pl.Series:
    """`count` random words per row, joined by spaces (column-wise: no Python loop per row)."""
    picks = [pl.Series(_WORDS[rng.integers(0, len(_WORDS), rows)]) for _ in range(count)]
    return pl.DataFrame({f"w{i}": s for i, s in enumerate(picks)}).select(
        pl.concat_str(pl.all(), separator=" ")).to_series()


def _null_where(series: pl.Series, mask: np.ndarray) -> pl.Series:
    return pl.DataFrame({"v": series, "m": mask}).select(
        pl.when(pl.col("m")).then(None).otherwise(pl.col("v")).alias(series.name)).to_series()


def _timestamps(rng: np.random.Generator, rows: int) -> pl.Series:
    micros = rng.integers(0, 60 * 365 * 86_400 * 1_000_000, rows)  # 1960..2020, microseconds
    return pl.Series(np.datetime64("1960-01-01T00:00:00", "us") + micros.astype("timedelta64[us]"))


def _frame(shape: str, rows: int) -> pl.DataFrame:
    rng = np.random.default_rng(sum(map(ord, shape)))
    ids = pl.Series("id", np.arange(rows, dtype=np.int64))
    if shape == "narrow":
        return pl.DataFrame({"a": ids, "b": rng.integers(0, 2**62, rows)})
    if shape == "wide_text":
        return pl.DataFrame({"id": ids, "a": _words(rng, rows, 14), "b": _words(rng, rows, 14),
                             "c": _words(rng, rows, 14)})
    if shape == "numeric":
        cents = rng.integers(0, 10_000_000_000, rows)
        return pl.DataFrame({"id": ids}).with_columns(
            price=pl.Series(cents // 100).cast(pl.String) + "." + pl.Series(cents % 100).cast(pl.String).str.zfill(2),
            ratio=pl.Series(rng.random(rows) * 10.0 ** rng.integers(-3, 6, rows)).round(9).cast(pl.String),
            qty=pl.Series(rng.integers(-50_000, 50_000, rows)))
    if shape == "temporal":
        days = pl.Series(np.datetime64("1900-01-01") + rng.integers(0, 45_000, rows).astype("timedelta64[D]"))
        at = _timestamps(rng, rows)
        at_tz = _timestamps(rng, rows).dt.strftime("%Y-%m-%d %H:%M:%S%.6f") + pl.Series(
            _OFFSETS[rng.integers(0, len(_OFFSETS), rows)])
        return pl.DataFrame({"id": ids, "day": days, "at": at, "at_tz": at_tz})
    if shape == "json":
        return pl.DataFrame({"id": ids}).with_columns(doc=pl.format(
            '{{"user": {{"id": {}, "name": "{}", "tags": ["{}", "{}"]}}, "score": {}, "ok": {}}}',
            pl.col("id"), _words(rng, rows, 2), _words(rng, rows, 1), _words(rng, rows, 1),
            pl.Series(rng.integers(0, 1000, rows)), pl.Series(rng.random(rows) > 0.5).cast(pl.String)))
    if shape == "nulls":
        half = rng.random((4, rows)) < 0.5
        label = _null_where(_words(rng, rows, 2).alias("label"), half[0])
        label = pl.DataFrame({"l": label, "e": rng.random(rows) < 0.1}).select(
            pl.when(pl.col("e")).then(pl.lit("")).otherwise(pl.col("l")).alias("label")).to_series()
        return pl.DataFrame({
            "id": ids, "label": label, "n": _null_where(pl.Series("n", rng.integers(0, 10**6, rows)), half[1]),
            "day": _null_where(pl.Series("day", np.datetime64("2000-01-01") + rng.integers(0, 9000, rows).astype(
                "timedelta64[D]")), half[2]),
            "note": _null_where(_words(rng, rows, 4).alias("note"), half[3])})
    if shape == "quoted":
        extra = np.array(['a, "quoted" word', "line one\nline two", "emoji 🎉 ünïcode", "comma, here", 'say "hi"'])
        return pl.DataFrame({"id": ids, "name": _words(rng, rows, 2) + ", " + _words(rng, rows, 1),
                             "comment": _words(rng, rows, 3) + " " + pl.Series(extra[rng.integers(0, 5, rows)])})
    if shape in ("mixed", "mixed5m"):
        cents = rng.integers(0, 100_000_000, rows)
        frame = pl.DataFrame({"id": ids}).with_columns(
            price=pl.Series(cents // 100).cast(pl.String) + "." + pl.Series(cents % 100).cast(pl.String).str.zfill(2),
            name=_words(rng, rows, 2) + pl.Series(np.where(rng.random(rows) < 0.05, ', "jr"', "")),
            active=pl.Series(rng.random(rows) > 0.5),
            born=pl.Series(np.datetime64("1900-01-01") + rng.integers(0, 45_000, rows).astype("timedelta64[D]")),
            seen=_timestamps(rng, rows),
            seen_tz=_timestamps(rng, rows).dt.strftime("%Y-%m-%d %H:%M:%S%.6f") + pl.Series(
                _OFFSETS[rng.integers(0, len(_OFFSETS), rows)]),
            doc=pl.format('{{"k": {}, "w": "{}"}}', pl.col("id"), _words(rng, rows, 1)),
            note=_words(rng, rows, 5) + pl.Series(np.where(rng.random(rows) < 0.02, "\nsecond line 🎉", "")))
        gaps = rng.random((3, rows)) < 0.02
        return frame.with_columns(
            _null_where(frame["name"], gaps[0]), _null_where(frame["born"], gaps[1]), _null_where(frame["note"], gaps[2]))
    if shape == "floats":
        return pl.DataFrame({"id": ids, "lat": rng.uniform(-90, 90, rows), "lon": rng.uniform(-180, 180, rows),
                             "score": rng.random(rows).astype(np.float32),
                             "km": np.round(rng.exponential(3, rows), 1)})  # about 2% are 0.0
    if shape == "keys":
        digits = np.frombuffer(b"0123456789abcdef", dtype="S1")[rng.integers(0, 16, (rows, 32))]
        hexes = pl.Series(digits.view("S32").ravel()).cast(pl.String)  # (no byte is NUL: none is cut off)
        uuid = pl.select(pl.concat_str([hexes.str.slice(a, b - a) for a, b in
                                        ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))], separator="-")).to_series()
        return pl.DataFrame({"id": uuid, "ok": rng.random(rows) < 0.5, "n": rng.integers(-30_000, 30_000, rows),
                             "label": np.array(["open", "closed", "pending", "void"])[rng.integers(0, 4, rows)]})
    raise ValueError(f"no such shape: {shape}")


def generate(shape: str, rows: int, folder: Path) -> Path:
    """The shape's CSV (made once; the same bytes every time for the same shape and rows)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"corpus_{shape}_{rows}.csv"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        _frame(shape, rows).write_csv(tmp, datetime_format="%Y-%m-%d %H:%M:%S%.6f")
        tmp.rename(path)
    return path
