"""The fast half of the SQL-script parser: many VALUES lists parsed at once, column-wise.

polars runs these patterns with Rust's regex engine, which never backtracks: time is
linear in the text whatever it holds. A value list that is not plain pg_dump output
(casts, E'' strings, comments, dollar quotes, words) is not guessed at: the caller
hands it to the careful parser, which loads it or refuses it with its line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import polars as pl

from core.sources.sqlscript.lexer import DEFAULT_VALUE

T = TypeVar("T")
_HALVES_FROM = 20_000  # rows: below this, one thread is as fast


def _in_halves(fn: Callable[[pl.Series], T], rows: pl.Series) -> list[T]:
    """fn on each half of rows, the first on a helper thread (polars lets go of the GIL); both joined."""
    if len(rows) < _HALVES_FROM:
        return [fn(rows)]
    mid = len(rows) // 2
    out: list[T] = []
    errors: list[BaseException] = []

    def first() -> None:
        try:
            out.append(fn(rows.slice(0, mid)))
        except BaseException as exc:  # noqa: BLE001 - raised again on the calling thread
            errors.append(exc)

    helper = threading.Thread(target=first, name="sluice-sqlbulk", daemon=True)
    helper.start()
    try:
        second = fn(rows.slice(mid))
    finally:
        helper.join()
    if errors:
        raise errors[0]
    return [out[0], second]


# One literal: a '' string (quotes doubled inside), a B'0101' bit string, or a bare word or number.
_TOKEN = r"[bB]?'(?:[^']|'')*'|[^\s,()']+"
_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_WORDS = ["NULL", "TRUE", "FALSE", "DEFAULT"]
# One value as pg_dump writes it (NULL, true/false, numbers, '' strings, B'' bit strings, DEFAULT
# for a generated column).
_VALUE = (r"(?:'(?:[^']|'')*'|[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NULL|true|false|DEFAULT"
          r"|B'[01]*')")
_ROWSEP = "),\n\t("  # --rows-per-insert puts each row on its own line


def split_rows(bodies: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Each body's rows as `(...)` texts (split where --rows-per-insert starts a line), and rows per body.

    A string holding "),\\n\\t(" is split too; its pieces then fail check_rows and the
    statement goes to the careful parser.
    """
    if not bodies.str.contains(_ROWSEP, literal=True).any():
        return bodies, pl.Series("n", [1] * len(bodies), dtype=pl.Int64)
    pieces = bodies.str.split(_ROWSEP)
    per_body = pieces.list.len().cast(pl.Int64)
    rows = pieces.explode()
    rows = "(" + rows.str.strip_prefix("(").str.strip_suffix(")") + ")"
    return rows, per_body


def check_rows(rows: pl.Series, width: int) -> pl.Series:
    """True for each `(...)` that is a row of `width` values exactly as pg_dump writes them."""
    pattern = rf"^\({_VALUE}(?:, ?{_VALUE}){{{width - 1}}}\)$"
    return pl.concat(_in_halves(lambda r: r.str.contains(pattern), rows))


def first_bad(rows: pl.Series, per_body: pl.Series, width: int) -> int:
    """How many bodies from the start have only good rows."""
    good = check_rows(rows, width)
    if good.all():
        return len(per_body)
    return int(per_body.cum_sum().search_sorted(int(good.arg_min() or 0), side="right"))


def rows_to_csv(rows: pl.Series, width: int) -> bytes:
    """Checked rows as CSV records with ' as the quote character and NULL unquoted.

    A pg_dump literal is already a CSV field quoted with ' (quotes doubled inside), so
    only the separators change. When a row holds no more ", " than its separators, one
    replace does it; otherwise its literals are taken out one by one and joined by ",".
    """
    plain = (rows.str.count_matches(", ", literal=True) == width - 1) & ~rows.str.contains("B'", literal=True)
    out = rows.str.replace_all(", ", ",", literal=True).str.strip_prefix("(").str.strip_suffix(")")
    if not plain.all():
        idx = (~plain).arg_true()
        toks = rows.gather(idx).str.extract_all(_TOKEN)
        if rows.gather(idx).str.contains("B'", literal=True).any():
            toks = toks.list.eval(pl.element().str.strip_prefix("B"))
        out = out.scatter(idx, toks.list.join(","))
    text: str = out.str.join("\n").item()
    return (text + "\n").encode()


def parse_values(
    bodies: pl.Series, width: int, *, build: bool = True
) -> tuple[int, pl.DataFrame | None, list[int]]:
    """Parse `(v, ...), (v, ...)` bodies (the text after VALUES, without ';').

    Only the layouts pg_dump writes are taken (values joined by ", " or ",", rows by
    ",\\n\\t" as --rows-per-insert does): each body must equal its own tokens put back
    together that way, which checks its structure without a second pattern. Returns how
    many bodies from the start parsed, their rows as string columns c0..c{width-1}
    (None for NULL; no frame unless `build`), and the rows of each parsed body.
    """
    if not len(bodies) or width < 1:
        return 0, None, []
    s = bodies.rename("b")
    toks = s.str.extract_all(_TOKEN)
    counts = toks.list.len()
    flat_body = s.str.replace_all("),\n\t(", ", ", literal=True)
    tuples = s.str.count_matches("),\n\t(", literal=True) + 1
    canonical = ("(" + toks.list.join(", ") + ")" == flat_body) | ("(" + toks.list.join(",") + ")" == flat_body)
    good = canonical.fill_null(False) & (counts == tuples * width)
    n_ok = len(s) if good.all() else int(good.arg_min() or 0)
    if n_ok == 0:
        return 0, None, []
    counts = counts.head(n_ok)
    frame = pl.DataFrame({"t": toks.head(n_ok).explode()}).select(
        q=pl.col("t").str.starts_with("'"),
        bits=pl.col("t").str.starts_with("B'") | pl.col("t").str.starts_with("b'"),
        t=pl.col("t"),
    )
    up = pl.col("t").str.to_uppercase()
    bad_tok = frame.select(
        ~(pl.col("q") | pl.col("bits") | up.is_in(_WORDS) | pl.col("t").str.contains(_NUMBER))
    ).to_series()
    if bad_tok.any():
        n_ok = int(counts.cum_sum().search_sorted(int(bad_tok.arg_max() or 0), side="right"))
        if n_ok == 0:
            return 0, None, []
        counts = counts.head(n_ok)
        frame = frame.head(int(counts.sum()))
    per_body = (counts // width).to_list()
    if not build:
        return n_ok, None, per_body
    length = pl.col("t").str.len_chars()
    values = frame.select(
        pl.when(pl.col("q"))
        .then(pl.col("t").str.slice(1, length - 2).str.replace_all("''", "'", literal=True))
        .when(pl.col("bits"))
        .then(pl.col("t").str.slice(2, length - 3))
        .when(up == "NULL")
        .then(None)
        .when(up == "DEFAULT")
        .then(pl.lit(DEFAULT_VALUE))
        .when(up.is_in(["TRUE", "FALSE"]))
        .then(pl.col("t").str.to_lowercase())
        .otherwise(pl.col("t"))
        .alias("v")
    ).to_series()
    out = pl.DataFrame({f"c{j}": values.gather_every(width, j) for j in range(width)})
    return n_ok, out, per_body


_COPY_ESCAPES = (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ("\\b", "\x08"), ("\\f", "\x0c"),
                 ("\\v", "\x0b"))


def copy_text_frame(text: str, width: int, first_line: int) -> pl.DataFrame:
    """Rows of COPY text (tab-separated, \\N for NULL, backslash escapes) as string columns."""
    from core.sources.sqlscript.lexer import ScriptError

    lines = pl.Series("l", [text], dtype=pl.String).str.strip_suffix("\n").str.split("\n").explode()
    lines = lines.str.strip_suffix("\r")
    tabs = lines.str.count_matches("\t", literal=True)
    if width < 1:
        width = int(str(tabs.max() or 0)) + 1
    wrong = tabs != width - 1
    if wrong.any():
        i = int(wrong.arg_max() or 0)
        raise ScriptError(f"a COPY row has {int(tabs[i]) + 1} fields, expected {width}", first_line + i)
    parts = lines.str.split_exact("\t", width - 1).struct.unnest()
    cols = []
    for j, name in enumerate(parts.columns):
        c = pl.col(name)
        plain = c
        unescaped = c.str.replace_all("\\\\", "\x00", literal=True)
        for esc, char in _COPY_ESCAPES:
            unescaped = unescaped.str.replace_all(esc, char, literal=True)
        unescaped = unescaped.str.replace_all(r"\\([^0-7x])", "$1").str.replace_all("\x00", "\\", literal=True)
        cols.append(
            pl.when(c == "\\N").then(None).when(c.str.contains("\\", literal=True)).then(unescaped)
            .otherwise(plain).alias(f"c{j}")
        )
    frame = parts.select(cols)
    left = parts.select(
        pl.any_horizontal(
            pl.col(n).str.replace_all("\\\\", "", literal=True).str.contains(r"\\[0-7x]") for n in parts.columns
        )
    )
    if left.to_series().any():
        raise ScriptError("octal or hex escapes in COPY data are not supported", first_line + int(
            left.to_series().arg_max() or 0))
    return frame
