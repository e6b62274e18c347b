"""Read a data-only SQL script (pg_dump's shapes) into rows, without executing anything.

One pass over the file, linear in its size whatever it holds:

What it yields (tables and chunks of rows) is in chunks.

- `COPY ... FROM stdin;` blocks are located, not parsed: their bytes are COPY text
  already, so a load passes them to the server as they are (CopyChunk, copy_blocks).
- INSERT statements whose head (`INSERT INTO t (cols) VALUES`) was already checked by
  the careful parser are gathered by line and quote parity (insert_blocks), then parsed
  thousands at a time by bulk_values (polars, Rust regex). Whatever that does not take, from
  the first statement it refuses on, is read again the careful way.
- Everything else goes through lexer's hand-written scanner and lexer: data
  statements are loaded, pg_dump's preamble is skipped, anything else is refused with
  its line before a byte is sent. `SET standard_conforming_strings = off` makes '...'
  take backslash escapes from there on (the bulk path then leaves statements holding a
  backslash to the careful way); pg_dump --disable-triggers' `ALTER TABLE t DISABLE|ENABLE
  TRIGGER ALL` is accepted and recorded in t's TableInfo.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import polars as pl

from core.sources.sqlscript.bulk_values import first_bad, parse_values, split_rows
from core.sources.sqlscript.chunks import Chunk, CsvChunk, ParsedChunk, TableInfo
from core.sources.sqlscript.copy_blocks import CopyChunk, copy_block_end
from core.sources.sqlscript.insert_blocks import BlockReader
from core.sources.sqlscript.lexer import DEFAULT_VALUE, ScriptError, StatementScanner, skip_blank
from core.sources.sqlscript.statements import CopyStmt, InsertStmt, InsertTarget, Row, StdStrings, Triggers, classify

__all__ = [
    "InsertTarget",
    "ScriptError",
    "iter_script",
    "list_tables",
    "scan_script",
    "validate_script",
]

_META_OK = ("\\restrict", "\\unrestrict", "\\connect", "\\c ")
_ONE_BYTE = ("latin", "iso8859", "cp125", "ascii", "cp437", "cp850", "mac-", "koi8")


class _Reader:
    def __init__(self, path: str) -> None:
        self.f: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by the parser
        self.offset = 0
        self.line = 1
        if self.f.read(3) == b"\xef\xbb\xbf":
            self.offset = 3
        else:
            self.f.seek(0)

    def readline(self) -> bytes:
        raw = self.f.readline()
        self.offset += len(raw)
        if raw:
            self.line += 1
        return raw

    def seek(self, offset: int, line: int) -> None:
        self.f.seek(offset)
        self.offset, self.line = offset, line


@dataclass
class _Rows:
    """Rows gathered for the next ParsedChunk of the current table."""

    target: InsertTarget | None = None
    on_conflict: bool = False
    frames: list[pl.DataFrame] = field(default_factory=list)
    lists: list[Row] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    statements: int = 0
    end: int = 0

    def lists_to_frame(self, width: int) -> None:
        if self.lists:
            cols = list(zip(*self.lists)) if self.lists else []
            self.frames.append(
                pl.DataFrame({f"c{i}": pl.Series(list(cols[i]), dtype=pl.String) for i in range(width)})
            )
            self.lists = []


class _Parser:
    def __init__(
        self,
        path: str,
        encoding: str,
        rows_per_chunk: int,
        want: Callable[[InsertTarget], bool] | None,
        trusted: bool,
        csv: bool = False,
    ) -> None:
        self.path, self.encoding = path, encoding
        self.rows_per_chunk = max(1, rows_per_chunk)
        self.want = want or (lambda _t: True)
        self.trusted = trusted  # the script was read once already: tables not wanted are stepped over
        self.r = _Reader(path)
        self.heads: dict[str, InsertTarget] = {}
        self.head = ""  # the head most recently seen, tried first
        self.tables: dict[tuple[str | None, str], TableInfo] = {}
        self.csv = csv  # fast rows as CSV (CsvChunk) rather than frames
        name = codecs.lookup(encoding).name
        single_byte = name != "utf-8" and name != "utf-8-sig"
        self.fast_encoding = not single_byte or name.startswith(_ONE_BYTE)
        self.blocks = BlockReader(self.r.f.fileno(), encoding, single_byte)
        self.acc = _Rows()
        self.careful_until = 0
        # After the bulk path refuses a statement, the next statements go the careful way, twice
        # as many after each refusal in a row: a file the bulk path never takes costs it little.
        self.careful_left = self.careful_streak = 0
        self.ignored = 0
        # A line and where its rest starts after a statement's ';' (not a copy of the rest: a line
        # of many statements would be copied once per statement, quadratic time).
        self.carry: tuple[str, int] | None = None
        self.scanner = StatementScanner()
        self.std_strings = True  # SET standard_conforming_strings = off: '...' takes backslash escapes
        self.no_triggers: set[tuple[str | None, str]] = set()  # tables named by DISABLE TRIGGER ALL

    # -- the main loop -------------------------------------------------------------------

    def run(self) -> Iterator[Chunk]:
        try:
            yield from self._run()
        finally:
            self.blocks.close()  # a block read ahead and not used: its thread is joined
            self.r.f.close()

    def _run(self) -> Iterator[Chunk]:
        r = self.r
        while True:
            if self.carry is not None:
                (text, at), self.carry = self.carry, None
                start, line, fast_ok = r.offset, r.line - 1, False
            else:
                start, line, at = r.offset, r.line, 0
                raw = r.readline()
                if not raw:
                    break
                text = raw.decode(self.encoding)
                fast_ok = start >= self.careful_until and not self.careful_left
            if fast_ok and self.heads and self.fast_encoding:
                head = self._known_head(text)
                if head is not None:
                    yield from self._gather(start, line, head)
                    continue
            at = skip_blank(text, at)
            if at == len(text) or text.startswith("--", at):
                continue
            if text[at].isspace():  # white space beyond SQL's (a no-break space): blank as str.strip says
                stripped = text[at:].strip()  # copied once: a statement starting so is refused
                if not stripped or stripped.startswith("--"):
                    continue
            if text[at] == "\\":
                stripped = text[at:].strip()  # the meta-command ends the line: copied once
                if not stripped.startswith(_META_OK):
                    raise ScriptError("refused psql meta-command", line, stripped)
                self.ignored += 1
                continue
            if self.careful_left:
                self.careful_left -= 1
            yield from self._careful(text, at, line)
        yield from self._take_rows()

    def _known_head(self, text: str) -> str | None:
        if self.head and text.startswith(self.head):
            return self.head
        if not text.startswith(("INSERT", "insert")):
            return None
        for head in self.heads:
            if text.startswith(head):
                self.head = head
                return head
        return None

    # -- the fast way: gather by quote parity, parse in bulk ----------------------------------

    def _gather(self, start: int, line: int, head: str) -> Iterator[Chunk]:
        """Statements from `start` on with this head: found by quote parity, checked and parsed in bulk."""
        target = self.heads[head]
        info = self.tables[target.key]
        g = self.blocks.gather(start, head, info.width, info.on_conflict)
        if g is None:  # no end found by parity: the careful way
            self.careful_until = start + 1
            self.r.seek(start, line)
            return
        n = len(g.bodies)
        bad_oc = (g.on_conflict != info.on_conflict).arg_true()
        n_ok = int(bad_oc[0]) if len(bad_oc) else n  # a change of ON CONFLICT: the careful way names the line
        bodies = g.bodies.head(n_ok)
        if not self.std_strings:  # backslashes escape: bodies holding one are read the careful way
            bodies = _reread_escaped(bodies, g.on_conflict, head, info.width, line, g.checked)
            n_ok = len(bodies)
        want = self.want(target)
        if g.checked:
            rows, per_body = bodies, pl.Series("n", [1] * n_ok, dtype=pl.Int64)
        else:
            rows, per_body = split_rows(bodies)
        if n_ok and not g.checked and not (self.trusted and not want):
            n_ok = first_bad(rows, per_body, info.width)
            if n_ok < len(per_body):
                per_body = per_body.head(n_ok)
                rows = rows.head(int(per_body.sum()))
        if n_ok:
            yield from self._switch(target, info.on_conflict)
            counts = per_body.to_list()
            # A DEFAULT item goes as DEFAULT_VALUE in a frame: the CSV would hold the word as text.
            if want and self.csv and not rows.str.contains("DEFAULT", literal=True).any():
                yield from self._take_rows()
                yield CsvChunk(target, rows, info.width, line, g.first_line.head(n_ok), counts,
                               start + int(g.end[n_ok - 1]), info.on_conflict)
            elif want:
                lines = [line + fl for fl, k in zip(g.first_line.to_list(), counts) for _ in range(k)]
                _, frame, _ = parse_values(rows, info.width)
                assert frame is not None
                self.acc.lists_to_frame(info.width)  # careful rows before these keep their place
                self.acc.frames.append(frame)
                self.acc.lines.extend(lines)
            info.rows += len(rows)
            info.statements += n_ok
            self.acc.statements += n_ok
            self.acc.end = start + int(g.end[n_ok - 1])
        if n_ok < n:
            self.r.seek(start + int(g.start[n_ok]), line + int(g.first_line[n_ok]))
            self.careful_until = start + int(g.end[n_ok])
            self.blocks.shrink()
            if n_ok == 0:
                self.careful_streak = min(max(1, self.careful_streak * 2), 4096)
                self.careful_left = self.careful_streak
        else:
            self.r.seek(start + int(g.end[-1]), line + g.lines)
            self.blocks.grow()
            self.careful_streak = 0
        if len(self.acc.lines) >= self.rows_per_chunk:
            yield from self._take_rows()

    # -- the careful way -------------------------------------------------------------------

    def _careful(self, text: str, at: int, line: int) -> Iterator[Chunk]:
        """The statement starting at text[at:], read to its ';' (more lines if need be) and handled."""
        scanner = self.scanner
        scanner.reset()
        escapes = scanner.escapes = not self.std_strings
        parts: list[str] = []
        while True:
            end = scanner.feed(text, at)
            if end >= 0:
                parts.append(text[at:end])
                break
            parts.append(text[at:] if at else text)
            at = 0
            raw = self.r.readline()
            if not raw:
                stmt = "".join(parts)
                if _only_comments(stmt, line, escapes):
                    return
                raise ScriptError("unterminated statement at end of file", line, stmt.strip()[:60])
            text = raw.decode(self.encoding)
        stmt = "".join(parts)
        parsed = classify(stmt, line, escapes)
        rest = skip_blank(text, end, semicolons=False)
        if rest < len(text) and not text.startswith("--", rest):
            if isinstance(parsed, CopyStmt):
                raise ScriptError("COPY ... FROM stdin; must end its line", line, text[rest:].strip())
            self.carry = (text, rest)
        if isinstance(parsed, InsertStmt):
            yield from self._careful_insert(parsed, line)
        elif isinstance(parsed, CopyStmt):
            yield from self._copy(parsed.target, line)
        elif isinstance(parsed, StdStrings):
            self.std_strings = parsed.on
        elif isinstance(parsed, Triggers):
            if parsed.disable:
                self.no_triggers.add(parsed.key)
                if parsed.key in self.tables:
                    self.tables[parsed.key].disable_triggers = True
        else:
            self.ignored += 1

    def _table(self, target: InsertTarget, kind: str, line: int) -> TableInfo:
        info = self.tables.get(target.key)
        if info is None:
            info = self.tables[target.key] = TableInfo(target, kind, line)
            info.disable_triggers = target.key in self.no_triggers
            if target.columns:
                info.width = len(target.columns)
        elif info.target.columns != target.columns:
            raise ScriptError(
                f"table {target.display()} appears again with a different column list", line, str(target.columns)
            )
        return info

    def _careful_insert(self, st: InsertStmt, line: int) -> Iterator[Chunk]:
        info = self._table(st.target, "insert", line)
        if info.statements == 0 and info.rows == 0:
            info.on_conflict = st.on_conflict
        elif st.on_conflict != info.on_conflict:
            raise ScriptError(
                f"some INSERTs into {st.target.display()} say ON CONFLICT DO NOTHING and others do not", line
            )
        if info.width < 0:
            info.width = len(st.rows[0])
        for row in st.rows:
            if len(row) != info.width:
                raise ScriptError(f"a row has {len(row)} values, expected {info.width}", line, "")
        if "\n" not in st.head and st.head.startswith(("INSERT", "insert")):
            self.heads.setdefault(st.head, st.target)
        yield from self._switch(st.target, st.on_conflict)
        if self.want(st.target):
            self.acc.lists.extend(st.rows)
            self.acc.lines.extend([line] * len(st.rows))
        info.rows += len(st.rows)
        info.statements += 1
        self.acc.statements += 1
        self.acc.end = self.r.offset
        if len(self.acc.lines) >= self.rows_per_chunk:
            yield from self._take_rows()

    def _copy(self, target: InsertTarget, line: int) -> Iterator[Chunk]:
        info = self._table(target, "copy", line)
        yield from self._take_rows()
        r = self.r
        start, first_line = r.offset, r.line
        found = copy_block_end(r.f, start)
        if found is None:
            raise ScriptError("COPY data not ended by a line \\.", line)
        data_end, after, rows = found
        r.seek(after, r.line + rows + 1)
        info.rows += rows
        info.statements += 1
        if rows:
            yield CopyChunk(target, start, data_end - start, rows, first_line, after)

    # -- chunks ------------------------------------------------------------------------------

    def _switch(self, target: InsertTarget, on_conflict: bool) -> Iterator[Chunk]:
        if self.acc.target is not None and self.acc.target != target:
            yield from self._take_rows()
        self.acc.target, self.acc.on_conflict = target, on_conflict

    def _take_rows(self) -> Iterator[Chunk]:
        acc = self.acc
        if acc.target is None:
            return
        width = self.tables[acc.target.key].width
        acc.lists_to_frame(width)
        if acc.frames:
            frame = pl.concat(acc.frames) if len(acc.frames) > 1 else acc.frames[0]
            yield ParsedChunk(acc.target, frame, acc.lines, acc.statements, acc.end, self.ignored, acc.on_conflict)
        self.acc = _Rows(acc.target, acc.on_conflict)


def _reread_escaped(
    bodies: pl.Series, on_conflict: pl.Series, head: str, width: int, line: int, one_row: bool
) -> pl.Series:
    """standard_conforming_strings off: the bodies, those holding a backslash read the careful way.

    A backslash in '...' then escapes, which the bulk path does not read; a body without one
    means the same either way. A body with one is read by the careful scanner and lexer and
    written back as standard literals, which the bulk path then reads as they are. The bodies
    are cut before the first that is not exactly one statement so read (a backslash before a
    quote may have fooled the quote parity that found it): from there on, the careful way.
    """
    from core.sources.sqlscript.gather import OCDN

    idx = bodies.str.contains("\\", literal=True).arg_true().to_list()
    if not idx:
        return bodies
    fixed: list[str] = []
    for body, oc in zip(bodies.gather(idx).to_list(), on_conflict.gather(idx).to_list()):
        rows = _escaped_rows(f"{head} {body}{OCDN if oc else ''};", line, width)
        if rows is None or (one_row and len(rows) != 1):
            break
        fixed.append("(" + "),\n\t(".join(", ".join(_literal(v) for v in row) for row in rows) + ")")
    if fixed:
        bodies = bodies.scatter(idx[: len(fixed)], fixed)
    return bodies if len(fixed) == len(idx) else bodies.head(idx[len(fixed)])


def _escaped_rows(stmt: str, line: int, width: int) -> list[Row] | None:
    """The rows of one INSERT read with backslash escapes; None unless it is exactly one such statement."""
    if StatementScanner(escapes=True).feed(stmt) != len(stmt):
        return None
    try:
        st = classify(stmt, line, escapes=True)
    except ScriptError:
        return None
    if not isinstance(st, InsertStmt) or any(len(row) != width for row in st.rows):
        return None
    return st.rows


def _literal(value: str | None) -> str:
    """A value written back as pg_dump writes it with standard_conforming_strings on."""
    if value is None:
        return "NULL"
    if value == DEFAULT_VALUE:
        return "DEFAULT"
    return "'" + value.replace("'", "''") + "'"


def _only_comments(text: str, line: int, escapes: bool) -> bool:
    from core.sources.sqlscript.lexer import lex

    return not lex(text, line, escapes)


def scan_script(
    path: str,
    *,
    encoding: str = "utf-8",
    rows_per_chunk: int = 50_000,
    want: Callable[[InsertTarget], bool] | None = None,
    tables: list[TableInfo] | None = None,
    trusted: bool = False,
    csv: bool = False,
) -> Iterator[Chunk]:
    """Every chunk of rows in file order: ParsedChunk for INSERTs, CopyChunk for COPY blocks.

    `want` says which tables' rows to build (the others are only checked, or stepped over
    when `trusted`: the script was checked already); `tables`, when given, is filled with
    what the script holds.
    """
    parser = _Parser(path, encoding, rows_per_chunk, want, trusted, csv)
    yield from parser.run()
    if tables is not None:
        tables.extend(parser.tables.values())


def list_tables(path: str, *, encoding: str = "utf-8") -> list[TableInfo]:
    """Read the whole script once: the tables it fills with their row counts, or a ScriptError."""
    tables: list[TableInfo] = []
    for _ in scan_script(path, encoding=encoding, want=lambda _t: False, tables=tables):
        pass
    return tables


def iter_script(
    path: str, *, encoding: str = "utf-8", rows_per_chunk: int = 50_000, table: InsertTarget | None = None
) -> Iterator[ParsedChunk]:
    """INSERT rows as ParsedChunks (COPY blocks decoded too), of one table or of the first one."""
    from core.sources.sqlscript.bulk_values import copy_text_frame

    key = table.key if table is not None else None
    want = None if key is None else (lambda t: t.key == key)
    for chunk in scan_script(path, encoding=encoding, rows_per_chunk=rows_per_chunk, want=want):
        if key is None:
            key = chunk.target.key
        if chunk.target.key != key:
            continue
        if isinstance(chunk, ParsedChunk):
            yield chunk
            continue
        assert isinstance(chunk, CopyChunk)
        line = chunk.first_line
        for piece in chunk.pieces(path, min(8 << 20, max(1 << 16, rows_per_chunk * 256))):
            frame = copy_text_frame(piece.decode(encoding), len(chunk.target.columns or ()), line)
            lines = list(range(line, line + frame.height))
            line += frame.height
            yield ParsedChunk(chunk.target, frame, lines, frame.height, chunk.bytes_end)


def validate_script(path: str, *, encoding: str = "utf-8") -> tuple[InsertTarget, int, int]:
    """The first table, its statements and rows (kept for callers of the one-table API)."""
    tables = list_tables(path, encoding=encoding)
    if not tables:
        raise ScriptError("the script has no INSERT statement or COPY block", 1)
    first = tables[0]
    return first.target, first.statements, first.rows
