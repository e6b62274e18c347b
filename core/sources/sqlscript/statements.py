"""What one statement of a data script means: rows to load, a COPY block, or harmless preamble.

Works on the tokens of lexer.lex; anything that is not data or pg_dump's preamble is
refused with the statement's line.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.sources.sqlscript.lexer import DEFAULT_VALUE, ScriptError, Token, lex

Row = list[str | None]


@dataclass(frozen=True)
class InsertTarget:
    schema: str | None
    table: str
    columns: tuple[str, ...] | None

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.schema, self.table)

    def display(self) -> str:
        return f"{self.schema}.{self.table}" if self.schema else self.table


@dataclass
class InsertStmt:
    target: InsertTarget
    head: str  # the statement's text up to and including VALUES
    rows: list[Row]
    on_conflict: bool  # ends with ON CONFLICT DO NOTHING


@dataclass
class CopyStmt:
    target: InsertTarget


@dataclass
class Ignored:
    pass


@dataclass
class StdStrings:
    """`SET standard_conforming_strings`: off means plain '...' strings take backslash escapes."""

    on: bool


@dataclass
class Triggers:
    """`ALTER TABLE t DISABLE|ENABLE TRIGGER ALL;` as pg_dump --disable-triggers writes it around t's data."""

    key: tuple[str | None, str]
    disable: bool


Statement = InsertStmt | CopyStmt | Ignored | StdStrings | Triggers
_REFUSED = "refused statement (only INSERT ... VALUES and COPY ... FROM stdin are loaded)"


def classify(text: str, line: int, escapes: bool = False) -> Statement:
    """What the statement is; `escapes`: standard_conforming_strings is off."""
    toks = lex(text, line, escapes)
    excerpt = text.strip()
    if not toks or (len(toks) == 1 and toks[0].text == ";"):
        return Ignored()
    first = toks[0]
    if first.is_word("INSERT"):
        return _insert(text, toks, line)
    if first.is_word("COPY"):
        return _copy(toks, line, excerpt)
    if first.is_word("ALTER"):
        return _triggers(toks, line, excerpt)
    if _ignorable(toks):
        on = _std_strings(toks, line, excerpt)
        return Ignored() if on is None else StdStrings(on)
    raise ScriptError(_REFUSED, line, excerpt)


class _Cursor:
    def __init__(self, toks: list[Token], line: int, excerpt: str) -> None:
        self.toks, self.i, self.line, self.excerpt = toks, 0, line, excerpt

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise ScriptError("the statement ends too early", self.line, self.excerpt)
        self.i += 1
        return tok

    def word(self, *words: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.is_word(*words):
            self.i += 1
            return True
        return False

    def punct(self, p: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == p:
            self.i += 1
            return True
        return False

    def fail(self, message: str, what: str | None = None) -> ScriptError:
        return ScriptError(message, self.line, what if what is not None else self.excerpt)


def _name(cur: _Cursor) -> tuple[str | None, str]:
    parts: list[str] = []
    while True:
        tok = cur.take()
        if tok.kind == "word":
            parts.append(tok.text.lower())
        elif tok.kind == "qident":
            parts.append(tok.text)
        else:
            raise cur.fail("expected a table name")
        if not cur.punct("."):
            break
    if len(parts) > 2:
        raise cur.fail("expected schema.table")
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def _column_list(cur: _Cursor) -> tuple[str, ...] | None:
    if not cur.punct("("):
        return None
    cols: list[str] = []
    while True:
        tok = cur.take()
        if tok.kind not in ("word", "qident"):
            raise cur.fail("expected a column name")
        cols.append(tok.text.lower() if tok.kind == "word" else tok.text)
        if cur.punct(")"):
            return tuple(cols)
        if not cur.punct(","):
            raise cur.fail("expected ',' or ')' in the column list")


def _insert(text: str, toks: list[Token], line: int) -> InsertStmt:
    cur = _Cursor(toks, line, text.strip())
    cur.take()
    if not cur.word("INTO"):
        raise cur.fail("expected INSERT INTO")
    cur.word("ONLY")
    schema, table = _name(cur)
    columns = _column_list(cur)
    if cur.word("OVERRIDING") and not (cur.word("SYSTEM", "USER") and cur.word("VALUE")):
        raise cur.fail("expected OVERRIDING SYSTEM|USER VALUE")
    values = cur.peek()
    if values is None or not values.is_word("VALUES"):
        raise cur.fail("only INSERT ... VALUES is loaded")
    cur.take()
    rows = _rows(cur)
    on_conflict = False
    if cur.word("ON"):
        if not (cur.word("CONFLICT") and cur.word("DO") and cur.word("NOTHING")):
            raise cur.fail("only ON CONFLICT DO NOTHING is loaded after the values")
        on_conflict = True
    tok = cur.peek()
    if tok is None or tok.text != ";" or tok.kind != "punct":
        what = tok.text if tok is not None else ""
        raise cur.fail("only INSERT ... VALUES is loaded, found more after the values", what)
    head = text[: values.pos + len(values.text)]
    return InsertStmt(InsertTarget(schema, table, columns), head, rows, on_conflict)


def _rows(cur: _Cursor) -> list[Row]:
    rows: list[Row] = []
    while True:
        if not cur.punct("("):
            raise cur.fail("malformed VALUES list")
        row: Row = []
        while True:
            row.append(_value(cur))
            if cur.punct(")"):
                break
            if not cur.punct(","):
                raise cur.fail("malformed VALUES list")
        rows.append(row)
        if not cur.punct(","):
            return rows


def _value(cur: _Cursor) -> str | None:
    tok = cur.take()
    value: str | None
    if tok.kind in ("string", "bits") or tok.kind == "number":
        value = tok.text
    elif tok.kind == "punct" and tok.text in "+-" and (nxt := cur.peek()) is not None and nxt.kind == "number":
        cur.take()
        value = tok.text + nxt.text
    elif tok.kind == "word" and tok.text.upper() in ("NULL", "TRUE", "FALSE"):
        value = None if tok.text.upper() == "NULL" else tok.text.lower()
    elif tok.is_word("DEFAULT"):
        return DEFAULT_VALUE  # no cast: PostgreSQL takes none after DEFAULT either
    elif tok.kind == "word":
        nxt = cur.peek()
        what = "a function call" if nxt is not None and nxt.text == "(" else f"the word {tok.text}"
        raise cur.fail(f"only literal values can be loaded, found {what}", tok.text)
    elif tok.kind == "punct" and tok.text == "(":
        raise cur.fail("only literal values can be loaded, found a sub-expression")
    else:
        raise cur.fail("only literal values can be loaded", tok.text)
    while cur.punct("::"):
        _skip_type(cur)
    return value


def _skip_type(cur: _Cursor) -> None:
    """A cast's type name: words, quoted names, dots, (n[, m]) and []."""
    depth, seen = 0, False
    while (tok := cur.peek()) is not None:
        if tok.kind in ("word", "qident") or (tok.kind == "punct" and tok.text in ".[]"):
            seen = True
        elif tok.kind == "number" and depth:
            pass
        elif tok.kind == "punct" and tok.text == "(" and seen and not depth:
            depth = 1
        elif tok.kind == "punct" and tok.text == "," and depth:
            pass
        elif tok.kind == "punct" and tok.text == ")" and depth:
            depth = 0
        else:
            break
        cur.take()
    if not seen or depth:
        raise cur.fail("malformed type cast")


def _copy(toks: list[Token], line: int, excerpt: str) -> CopyStmt:
    cur = _Cursor(toks, line, excerpt)
    cur.take()
    cur.word("ONLY")
    schema, table = _name(cur)
    columns = _column_list(cur)
    if not (cur.word("FROM") and cur.word("STDIN")):
        raise cur.fail("only COPY ... FROM stdin is loaded")
    if not cur.punct(";") or cur.peek() is not None:
        raise cur.fail("only COPY ... FROM stdin; in text format (pg_dump's) is loaded")
    return CopyStmt(InsertTarget(schema, table, columns))


def _ignorable(toks: list[Token]) -> bool:
    """pg_dump's preamble and trailer: SET, set_config, setval, transaction control."""
    words = [t.text.upper() for t in toks if t.kind == "word"]
    first = words[0] if words else ""
    if first in ("BEGIN", "COMMIT", "END", "START"):
        return len(toks) <= 4 and all(t.kind == "word" or t.text == ";" for t in toks)
    if first == "SET":
        return all(t.kind != "punct" or t.text in "=.,-+;" for t in toks)
    if first == "SELECT":
        cur = _Cursor(toks, 0, "")
        cur.take()
        if cur.word("PG_CATALOG") and not cur.punct("."):
            return False
        if not (cur.word("SET_CONFIG", "SETVAL") and cur.punct("(")):
            return False
        while (tok := cur.peek()) is not None and tok.text != ")":
            if tok.kind == "punct" and tok.text not in (",", "::", "-"):
                return False
            cur.take()
        return cur.punct(")") and cur.punct(";") and cur.peek() is None
    return False


def _triggers(toks: list[Token], line: int, excerpt: str) -> Triggers:
    """Only `ALTER TABLE [ONLY] name DISABLE|ENABLE TRIGGER ALL;`; any other ALTER is refused."""
    cur = _Cursor(toks, line, excerpt)
    cur.take()
    if not cur.word("TABLE"):
        raise ScriptError(_REFUSED, line, excerpt)
    cur.word("ONLY")
    try:
        key = _name(cur)
    except ScriptError:
        raise ScriptError(_REFUSED, line, excerpt) from None
    disable = cur.word("DISABLE")
    if not (disable or cur.word("ENABLE")) or not (cur.word("TRIGGER") and cur.word("ALL")):
        raise ScriptError(_REFUSED, line, excerpt)
    if not cur.punct(";") or cur.peek() is not None:
        raise ScriptError(_REFUSED, line, excerpt)
    return Triggers(key, disable)


_BOOL = {"ON": True, "TRUE": True, "YES": True, "1": True, "DEFAULT": True,
         "OFF": False, "FALSE": False, "NO": False, "0": False}


def _std_strings(toks: list[Token], line: int, excerpt: str) -> bool | None:
    """The value an ignorable SET or set_config gives standard_conforming_strings, else None."""
    cur = _Cursor(toks, line, excerpt)
    if cur.word("SET"):
        cur.word("SESSION", "LOCAL")
        if not cur.word("STANDARD_CONFORMING_STRINGS"):
            return None
        if not (cur.punct("=") or cur.word("TO")):
            raise cur.fail("malformed SET standard_conforming_strings")
    else:  # SELECT [pg_catalog.]set_config('standard_conforming_strings', 'off', false)
        name = next((t for t in toks if t.kind == "string"), None)
        if name is None or name.text.lower() != "standard_conforming_strings":
            return None
        cur.i = toks.index(name) + 1
        if not cur.punct(","):
            raise cur.fail("malformed set_config of standard_conforming_strings")
    tok = cur.peek()
    value = tok.text.upper() if tok is not None and tok.kind in ("word", "string", "number") else ""
    if value not in _BOOL:
        raise cur.fail("standard_conforming_strings must be on or off")
    return _BOOL[value]
