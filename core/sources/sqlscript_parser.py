"""Parse INSERT ... VALUES scripts into rows without executing anything.

A fast path handles the common one-statement-per-line shape with one regex per
statement; anything it does not fully understand goes to a careful tokenizer,
which refuses whatever is not a literal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import polars as pl


class ScriptError(Exception):
    def __init__(self, message: str, line: int, excerpt: str = "") -> None:
        self.message, self.line, self.statement_excerpt = message, line, excerpt[:120]
        super().__init__(f"line {line}: {message}" + (f": {excerpt[:120]}" if excerpt else ""))


@dataclass(frozen=True)
class InsertTarget:
    schema: str | None
    table: str
    columns: tuple[str, ...] | None


@dataclass
class ParsedChunk:
    target: InsertTarget
    frame: pl.DataFrame  # string columns c0..cN, None for NULL
    lines: list[int]
    statements: int
    bytes_end: int
    ignored: int = 0

    @property
    def columns(self) -> list[list[str | None]]:
        return [self.frame.get_column(c).to_list() for c in self.frame.columns]


_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_HEAD = re.compile(
    rf"\s*INSERT\s+INTO\s+(?:ONLY\s+)?({_IDENT}(?:\s*\.\s*{_IDENT})?)\s*(\((?:[^()\"]|\"(?:[^\"]|\"\")*\")*\))?"
    rf"\s*(?:OVERRIDING\s+(?:SYSTEM|USER)\s+VALUE\s+)?VALUES\s*",
    re.IGNORECASE,
)
# One simple literal: a plain string, a number, NULL, TRUE/FALSE.
_LIT = r"'(?:[^']|'')*'|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NULL|TRUE|FALSE"
_FAST_ROW = re.compile(rf"\(\s*(?:(?:{_LIT})\s*,\s*)*(?:{_LIT})\s*\)", re.IGNORECASE)
_FAST_LIT = re.compile(rf"({_LIT})\s*(?:,|\))", re.IGNORECASE)
_IGNORED = re.compile(
    r"\s*(?:SET\s+[\w.]+\s*(?:=|TO)\s*[^;]*|SELECT\s+pg_catalog\.(?:set_config|setval)\s*\([^;]*\)"
    r"|BEGIN|COMMIT|END|START\s+TRANSACTION)\s*;\s*$",
    re.IGNORECASE,
)
_META_OK = re.compile(r"\\(?:restrict|unrestrict|connect)\b")


def _ident(text: str) -> str:
    text = text.strip()
    if text.startswith('"'):
        return text[1:-1].replace('""', '"')
    return text.lower()


def _split_ident(text: str) -> list[str]:
    return [_ident(p) for p in re.findall(_IDENT, text)]


def _target(name: str, cols: str | None) -> InsertTarget:
    parts = _split_ident(name)
    schema, table = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    columns = tuple(_split_ident(cols[1:-1])) if cols else None
    return InsertTarget(schema, table, columns)


def _literal_value(tok: str) -> str | None:
    if tok[0] == "'":
        return tok[1:-1].replace("''", "'")
    up = tok.upper()
    if up == "NULL":
        return None
    if up in ("TRUE", "FALSE"):
        return up.lower()
    return tok


# -- the careful tokenizer ------------------------------------------------------------

_ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "\\": "\\", "'": "'"}


def _e_string(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "'" and body[i + 1 : i + 2] == "'":
            out.append("'")
            i += 2
            continue
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in _ESC:
            out.append(_ESC[n])
            i += 2
        elif n in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m
            out.append(chr(int(m.group(), 8)))
            i += 1 + len(m.group())
        elif n == "x" and re.match(r"[0-9A-Fa-f]", body[i + 2 : i + 3] or "-"):
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            assert m
            out.append(chr(int(m.group(), 16)))
            i += 2 + len(m.group())
        elif n in "uU":
            width = 4 if n == "u" else 8
            out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
            i += 2 + width
        else:
            out.append(n)
            i += 2
    return "".join(out)


_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>--[^\n]*)|(?P<bc>/\*)|(?P<e>[eE]'(?:[^'\\]|\\.|'')*')|(?P<s>'(?:[^']|'')*')"""
    r"""|(?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)|(?P<num>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"""
    r"""|(?P<cast>::\s*(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_ ]*?)"""
    r"""(?:\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\))?(?:\[\])*(?=\s*[,)]))"""
    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_$]*)|(?P<p>[(),;])""",
    re.DOTALL,
)


def _values_slow(text: str, line: int) -> tuple[list[list[str | None]], int]:
    """Parse `(lit, ...), (...) ;` from the start of text; return rows and the index after ';'."""
    rows: list[list[str | None]] = []
    pos, depth = 0, 0
    row: list[str | None] = []
    expect_value = False
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ScriptError("only literal values can be loaded", line, text[pos : pos + 60])
        kind, tok = m.lastgroup, m.group()
        pos = m.end()
        if kind in ("ws", "lc"):
            continue
        if kind == "bc":
            depth_c, j = 1, pos
            while depth_c and j < len(text):
                if text.startswith("/*", j):
                    depth_c, j = depth_c + 1, j + 2
                elif text.startswith("*/", j):
                    depth_c, j = depth_c - 1, j + 2
                else:
                    j += 1
            if depth_c:
                raise ScriptError("unterminated comment", line)
            pos = j
            continue
        if kind == "p":
            if tok == "(":
                if depth:
                    raise ScriptError("only literal values can be loaded, found a sub-expression", line, text[:80])
                depth, row, expect_value = 1, [], True
            elif tok == ",":
                if depth:
                    expect_value = True
            elif tok == ")":
                if not depth or expect_value:
                    raise ScriptError("malformed VALUES list", line, text[:80])
                rows.append(row)
                depth = 0
            else:  # ;
                if depth:
                    raise ScriptError("unterminated VALUES row", line)
                return rows, pos
            continue
        if kind == "cast":
            continue
        if not depth or not expect_value:
            if kind == "word" and not depth:
                raise ScriptError("only INSERT ... VALUES is loaded, found more after the values", line, tok)
            raise ScriptError("only literal values can be loaded", line, text[:80])
        if kind == "word":
            up = tok.upper()
            if up in ("NULL", "TRUE", "FALSE"):
                row.append(_literal_value(tok))
            else:
                kind_txt = "a function call" if text[pos : pos + 1] == "(" else f"the word {tok}"
                raise ScriptError(f"only literal values can be loaded, found {kind_txt}", line, tok)
        elif kind == "s":
            row.append(tok[1:-1].replace("''", "'"))
        elif kind == "e":
            row.append(_e_string(tok[2:-1]))
        elif kind == "dollar":
            end = text.find(tok, pos)
            if end < 0:
                raise ScriptError("unterminated dollar-quoted string", line)
            row.append(text[pos:end])
            pos = end + len(tok)
        else:
            row.append(tok)
        expect_value = False
    raise ScriptError("unterminated statement at end of file", line)


# -- statement splitting over a stream --------------------------------------------------


FastHook = Callable[[str, int], bool]
_BARE = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NULL|TRUE|FALSE|null|true|false"
# Values with no quote at all: numbers, NULL, booleans only.
_BARE_BODY = re.compile(rf"\s*(?:{_BARE})(?:\s*,\s*(?:{_BARE}))*\s*")


BulkHook = Callable[[list[str], int], bool]


def _statements(
    path: str,
    encoding: str,
    fast: FastHook | None = None,
    fast_full: Callable[[], bool] | None = None,
    bulk: BulkHook | None = None,
) -> Iterator[tuple[str, int, int]]:
    """(statement text incl. ';', start line, byte offset after it), streaming.

    Splits on ';' outside strings, comments and dollar quotes. Backslash meta-command
    lines come as their own statement. An empty text is a tick after rows went through
    a hook, so the caller can hand out a full chunk.
    """
    with open(path, "rb") as f:
        if f.read(3) != b"\xef\xbb\xbf":
            f.seek(0)
        line_no = 1
        buf = ""
        buf_line = 1
        offset = f.tell()
        while True:
            block = f.readlines(1 << 20)
            if not block:
                break
            if not buf and bulk is not None and bulk([b.decode(encoding) for b in block], line_no):
                line_no += len(block)
                offset += sum(len(b) for b in block)
                yield "", line_no, offset
                continue
            for raw in block:
                offset += len(raw)
                text = raw.decode(encoding)
                if not buf and fast is not None and fast(text, line_no):
                    line_no += 1
                    if fast_full is not None and fast_full():
                        yield "", line_no, offset
                    continue
                if not buf:
                    stripped = text.strip()
                    if not stripped or stripped.startswith("--"):
                        line_no += 1
                        continue
                    if stripped.startswith("\\"):
                        yield stripped, line_no, offset
                        line_no += 1
                        continue
                    buf_line = line_no
                buf += text
                line_no += 1
                if ";" in text and _complete(buf):
                    yield buf, buf_line, offset
                    buf = ""
        if buf.strip() and not _only_comments(buf):
            raise ScriptError("unterminated statement at end of file", buf_line, buf.strip()[:60])


_SCAN = re.compile(
    r"""'(?:[^']|'')*'?|[eE]'(?:[^'\\]|\\.|'')*'?|--[^\n]*|/\*.*?(?:\*/|$)|\$[A-Za-z_]*\$|;""", re.DOTALL
)


def _complete(buf: str) -> bool:
    """Does buf end a statement: a ';' outside quotes/comments, as its last token?"""
    pos = 0
    last_semi = -1
    while True:
        m = _SCAN.search(buf, pos)
        if not m:
            break
        tok = m.group()
        if tok == ";":
            last_semi = m.end()
        elif tok.startswith("'") or tok[:2] in ("e'", "E'"):
            if len(tok) < 2 or not tok.endswith("'") or tok in ("e'", "E'"):
                return False  # inside an open string
        elif tok.startswith("/*") and not tok.endswith("*/"):
            return False
        elif tok.startswith("$"):
            end = buf.find(tok, m.end())
            if end < 0:
                return False
            pos = end + len(tok)
            continue
        pos = m.end()
    return last_semi >= 0 and not buf[last_semi:].strip().replace("\n", "")


def _only_comments(text: str) -> bool:
    return not re.sub(r"--[^\n]*|/\*.*?\*/|\s+", "", text, flags=re.DOTALL)


def iter_script(path: str, *, encoding: str = "utf-8", rows_per_chunk: int = 50_000) -> Iterator[ParsedChunk]:
    st = _State()

    def fast(text: str, line: int) -> bool:
        """A one-row INSERT on one line whose head was already checked by the careful path."""
        for head in st.fast_heads:
            if text.startswith(head):
                break
        else:
            return False
        body = text[len(head) :].rstrip()
        if not (body.startswith("(") and body.endswith(");")):
            return False
        inner = body[1:-2]
        if "'" not in inner:
            if not _BARE_BODY.fullmatch(inner):
                return False
            row: list[str | None] = [_bare(v) for v in inner.split(",")]
        else:
            if not _FAST_ROW.fullmatch(body[:-1]):
                return False
            row = [_literal_value(t) for t in _FAST_LIT.findall(body[:-1], 1)]
        st.add(row, line, text)
        st.statements += 1
        return True

    def full() -> bool:
        return st.rows >= rows_per_chunk

    def bulk(texts: list[str], first_line: int) -> bool:
        """A whole block of one-row, quote-free INSERTs with the known head: parsed column-wise."""
        if len(st.fast_heads) != 1 or st.width < 1:
            return False
        head = st.fast_heads[0]
        lines = pl.Series(texts, dtype=pl.String).str.strip_chars_end()
        if not lines.str.starts_with(head).all():
            return False
        body = lines.str.slice(len(head))
        if not (body.str.starts_with("(") & body.str.ends_with(");")).all():
            return False
        inner = body.str.slice(1).str.head(-2)
        if not inner.str.contains(f"^{_BARE_BODY.pattern}$").all():
            return False
        if not (inner.str.count_matches(",", literal=True) == st.width - 1).all():
            return False
        parts = inner.str.split_exact(",", st.width - 1).struct.unnest()
        frame = parts.select(
            pl.when(pl.col(c).str.strip_chars().str.to_lowercase().is_in(["null"]))
            .then(None)
            .when(pl.col(c).str.strip_chars().str.to_lowercase().is_in(["true", "false"]))
            .then(pl.col(c).str.strip_chars().str.to_lowercase())
            .otherwise(pl.col(c).str.strip_chars())
            .alias(f"c{i}")
            for i, c in enumerate(parts.columns)
        )
        st.add_frame(frame, list(range(first_line, first_line + len(texts))))
        return True

    end = 0
    for stmt, line, end in _statements(path, encoding, fast, full, bulk):
        if st.pending_chunk(rows_per_chunk):
            yield st.take(end)
        if not stmt:
            continue
        if stmt.startswith("\\"):
            if _META_OK.match(stmt):
                st.ignored += 1
                continue
            raise ScriptError("refused psql meta-command", line, stmt)
        m = _HEAD.match(stmt)
        if not m:
            if _IGNORED.match(stmt):
                st.ignored += 1
                continue
            raise ScriptError("refused statement (only INSERT ... VALUES is loaded)", line, stmt.strip())
        head = m.group(0)
        tgt = st.heads.get(head)
        if tgt is None:
            tgt = _target(m.group(1), m.group(2))
            st.heads[head] = tgt
            if st.target is None or tgt == st.target:
                st.fast_heads = (*st.fast_heads, head)
        if st.target is None:
            st.target = tgt
        elif tgt != st.target:
            raise ScriptError(
                "all statements must insert into the same table and columns as the first one", line, stmt.strip()
            )
        rest = stmt[m.end() :]
        rows = _fast_rows(rest)
        if rows is None:
            rows, after = _values_slow(rest, line)
            if not _only_comments(rest[after:]):
                raise ScriptError("only one statement per INSERT is loaded", line, rest[after:].strip())
        for r in rows:
            st.add(r, line, stmt)
        st.statements += 1
    if st.target is not None and st.rows:
        yield st.take(os.path.getsize(path))  # the last statements may all have taken the fast path


class _State:
    """Rows gathered for the next chunk: lists from the careful path, frames from the bulk one."""

    def __init__(self) -> None:
        self.target: InsertTarget | None = None
        self.heads: dict[str, InsertTarget] = {}
        self.fast_heads: tuple[str, ...] = ()
        self.cols: list[list[str | None]] = []
        self.frames: list[pl.DataFrame] = []
        self.lines: list[int] = []
        self.width = -1
        self.statements = 0
        self.ignored = 0

    @property
    def rows(self) -> int:
        return len(self.lines)

    def add(self, row: list[str | None], line: int, stmt: str) -> None:
        if self.width < 0:
            assert self.target is not None
            self.width = len(self.target.columns) if self.target.columns else len(row)
            self.cols = [[] for _ in range(self.width)]
        if len(row) != self.width:
            raise ScriptError(f"a row has {len(row)} values, expected {self.width}", line, stmt.strip())
        for col, v in zip(self.cols, row):
            col.append(v)
        self.lines.append(line)

    def _lists_to_frame(self) -> None:
        if self.cols and self.cols[0]:
            self.frames.append(
                pl.DataFrame({f"c{i}": pl.Series(c, dtype=pl.String) for i, c in enumerate(self.cols)})
            )
            self.cols = [[] for _ in range(self.width)]

    def add_frame(self, frame: pl.DataFrame, lines: list[int]) -> None:
        self._lists_to_frame()
        self.frames.append(frame)
        self.lines.extend(lines)
        self.statements += frame.height

    def pending_chunk(self, limit: int) -> bool:
        return self.rows >= limit

    def take(self, end: int) -> ParsedChunk:
        assert self.target is not None
        self._lists_to_frame()
        frame = pl.concat(self.frames) if len(self.frames) > 1 else self.frames[0]
        chunk = ParsedChunk(self.target, frame, self.lines, self.statements, end, self.ignored)
        self.frames, self.lines, self.statements = [], [], 0
        return chunk


def _bare(v: str) -> str | None:
    t = v.strip()
    c = t[0]
    if c in "nN":
        return None
    if c in "tTfF":
        return t.lower()
    return t


def _fast_rows(rest: str) -> list[list[str | None]] | None:
    """Single-row VALUES of simple literals ending in ';' (the common pg_dump shape), else None."""
    text = rest.rstrip()
    if not text.endswith(";"):
        return None
    body = text[:-1].rstrip()
    m = _FAST_ROW.fullmatch(body)
    if not m:
        return None
    return [[_literal_value(t) for t in _FAST_LIT.findall(body, 1)]]


def validate_script(path: str, *, encoding: str = "utf-8") -> tuple[InsertTarget, int, int]:
    target: InsertTarget | None = None
    statements = rows = 0
    for chunk in iter_script(path, encoding=encoding):
        target = chunk.target
        statements += chunk.statements
        rows += len(chunk.lines)
    if target is None:
        raise ScriptError("the script has no INSERT statement", 1)
    return target, statements, rows
