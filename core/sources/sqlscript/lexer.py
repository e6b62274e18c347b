"""The careful half of the SQL-script parser: a hand-written lexer and statement scanner.

No regular expression ever runs on the file's text here. Every loop moves forward
through the text (str.find jumps, or one character at a time), so the work is linear
in the statement's length whatever it holds: long digit runs, unbalanced quotes or a
megabyte of VALUES.
"""

from __future__ import annotations

from dataclasses import dataclass

# A VALUES item written DEFAULT (pg_dump writes it for a generated column). A NUL byte is never
# in PostgreSQL text, so this cannot be a value the script spelled out.
DEFAULT_VALUE = "\x00DEFAULT"


class ScriptError(Exception):
    def __init__(self, message: str, line: int, excerpt: str = "") -> None:
        self.message, self.line, self.statement_excerpt = message, line, excerpt[:120]
        super().__init__(f"line {line}: {message}" + (f": {excerpt[:120]}" if excerpt else ""))


_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT_CHARS = _IDENT_START | frozenset("0123456789$")
_DIGITS = frozenset("0123456789")
_SPACE = frozenset(" \t\r\n\f\v")


def skip_blank(text: str, i: int, *, semicolons: bool = True) -> int:
    """The first index from i on that is not white space (nor a ';' ending an empty statement).

    Moves forward without copying the rest of the line: after each of many statements on one
    line, only the blanks before the next one are looked at.
    """
    n = len(text)
    while i < n and (text[i] in _SPACE or (semicolons and text[i] == ";")):
        i += 1
    return i


class _Find:
    """str.find asked again and again with a start that only grows: the text is scanned once.

    Two needles searched in turn (a quote and a backslash, say) would otherwise each rescan
    the rest of a long line at every step: quadratic time on a line of backslashes.
    """

    __slots__ = ("hit", "needle", "text")

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle, self.hit = text, needle, -2

    def at(self, i: int) -> int:
        """First occurrence at or after i, or -1."""
        if self.hit == -1 or self.hit >= i:
            return self.hit
        self.hit = self.text.find(self.needle, i)
        return self.hit


# Scanner modes between lines.
_CODE, _STR, _ESTR, _QID, _DOLLAR, _BLOCK = range(6)


class StatementScanner:
    """Finds the ';' that ends a statement, fed one line after another.

    The state (inside a string, a comment, a dollar quote) carries over from line to
    line, so a statement of a million lines is scanned once, not once per line. Several
    statements on one line are fed the same line object at growing offsets: its searches
    (_Find) are kept, so the line is scanned once whatever the number of statements on it.
    `escapes` reads plain '...' strings as E'...' ones (standard_conforming_strings off).
    """

    def __init__(self, escapes: bool = False) -> None:
        self.mode = _CODE
        self.tag = ""
        self.depth = 0
        self.escapes = escapes
        self._line: str | None = None
        self._finds: tuple[_Find, _Find, _Find, _Find, _Find] | None = None
        self._tag: _Find | None = None

    def reset(self) -> None:
        """Outside any string or comment again (a new statement starts)."""
        self.mode, self.depth = _CODE, 0

    def _searches(self, line: str, start: int) -> tuple[_Find, _Find, _Find, _Find, _Find]:
        # Kept only for a later offset of the same line: _Find needs starts that only grow.
        if self._finds is None or start == 0 or line is not self._line:
            self._line, self._tag = line, None
            self._finds = (_Find(line, "'"), _Find(line, '"'), _Find(line, "\\"), _Find(line, "/*"),
                           _Find(line, "*/"))
        return self._finds

    def feed(self, line: str, start: int = 0) -> int:
        """Index just after the statement's ';' in this line (scanned from `start`), or -1 when it goes on."""
        i, n = start, len(line)
        quote, dquote, backslash, opens, closes = self._searches(line, start)
        while i < n:
            mode = self.mode
            if mode in (_STR, _QID):
                q = "'" if mode == _STR else '"'
                j = (quote if mode == _STR else dquote).at(i)
                if j < 0:
                    return -1
                if j + 1 < n and line[j + 1] == q:
                    i = j + 2
                    continue
                self.mode, i = _CODE, j + 1
                continue
            if mode == _ESTR:
                j = quote.at(i)
                k = backslash.at(i)
                if 0 <= k < j or (j < 0 <= k):
                    i = k + 2
                    if i > n:  # a backslash ending the line escapes the newline's first byte
                        return -1
                    continue
                if j < 0:
                    return -1
                if j + 1 < n and line[j + 1] == "'":
                    i = j + 2
                    continue
                self.mode, i = _CODE, j + 1
                continue
            if mode == _DOLLAR:
                tag = self._tag
                if tag is None or tag.needle != self.tag:
                    tag = self._tag = _Find(line, self.tag)
                j = tag.at(i)
                if j < 0:
                    return -1
                self.mode, i = _CODE, j + len(self.tag)
                continue
            if mode == _BLOCK:
                a, b = opens.at(i), closes.at(i)
                if b < 0 and a < 0:
                    return -1
                if 0 <= a < b or b < 0:
                    self.depth, i = self.depth + 1, a + 2
                    continue
                self.depth, i = self.depth - 1, b + 2
                if not self.depth:
                    self.mode = _CODE
                continue
            c = line[i]
            if c == ";":
                return i + 1
            if c == "'":
                word_e = i >= 1 and line[i - 1] in "eE" and (i < 2 or line[i - 2] not in _IDENT_CHARS)
                bits = i >= 1 and line[i - 1] in "bBxX" and (i < 2 or line[i - 2] not in _IDENT_CHARS)
                self.mode = _ESTR if word_e or (self.escapes and not bits) else _STR
            elif c == '"':
                self.mode = _QID
            elif c == "-" and line.startswith("--", i):
                return -1  # the comment runs to the end of the line
            elif c == "/" and line.startswith("/*", i):
                self.mode, self.depth = _BLOCK, 1
                i += 2
                continue
            elif c == "$" and (i == 0 or line[i - 1] not in _IDENT_CHARS):
                j = i + 1
                while j < n and line[j] in _IDENT_CHARS and line[j] != "$":
                    j += 1
                if j < n and line[j] == "$" and (j == i + 1 or line[i + 1] not in _DIGITS):
                    self.mode, self.tag = _DOLLAR, line[i : j + 1]
                    i = j + 1
                    continue
            i += 1
        return -1


@dataclass(frozen=True)
class Token:
    kind: str  # word, qident, string, bits, number, dollar, punct
    text: str  # words as written; literals and quoted names already unquoted
    pos: int  # offset in the statement

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "\\": "\\", "'": "'", '"': '"'}


def _e_string(body: str, line: int) -> str:
    """The value of an E'...' body (quotes removed), PostgreSQL's backslash escapes applied."""
    out: list[str] = []
    i, n = 0, len(body)
    backslash, doubled = _Find(body, "\\"), _Find(body, "''")
    while i < n:
        k = backslash.at(i)
        q = doubled.at(i)
        nxt = min(x for x in (k, q, n) if x >= 0)
        out.append(body[i:nxt])
        if nxt == n:
            break
        if nxt == q and (k < 0 or q < k):
            out.append("'")
            i = q + 2
            continue
        c = body[k + 1 : k + 2]
        i = k + 2
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c and c in "01234567":
            j = k + 1
            while j < min(n, k + 4) and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[k + 1 : j], 8)))
            i = j
        elif c == "x" and k + 2 < n and body[k + 2] in _HEX:
            j = k + 2
            while j < min(n, k + 4) and body[j] in _HEX:
                j += 1
            out.append(chr(int(body[k + 2 : j], 16)))
            i = j
        elif c in ("u", "U"):
            width = 4 if c == "u" else 8
            digits = body[k + 2 : k + 2 + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                raise ScriptError("invalid Unicode escape in an E'' string", line)
            out.append(chr(int(digits, 16)))
            i = k + 2 + width
        else:
            out.append(c)
    return "".join(out)


_HEX = frozenset("0123456789abcdefABCDEF")


def lex(text: str, line: int, escapes: bool = False) -> list[Token]:
    """The statement's tokens, comments dropped. Raises on an unterminated literal or comment.

    `escapes`: plain '...' strings are read as E'...' ones (standard_conforming_strings off).
    """
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "/" and text.startswith("/*", i):
            i = _skip_block(text, i, line)
        elif c == "'" and escapes:
            j = _estring_end(text, i + 1, line)
            toks.append(Token("string", _e_string(text[i + 1 : j], line), i))
            i = j + 1
        elif c == "'":
            j = _string_end(text, i + 1, line)
            toks.append(Token("string", text[i + 1 : j].replace("''", "'"), i))
            i = j + 1
        elif c == '"':
            j = i + 1
            while True:
                k = text.find('"', j)
                if k < 0:
                    raise ScriptError("unterminated quoted name", line, text[i : i + 60])
                if text.startswith('""', k):
                    j = k + 2
                    continue
                break
            toks.append(Token("qident", text[i + 1 : k].replace('""', '"'), i))
            i = k + 1
        elif c in "eEbBxX" and text.startswith("'", i + 1):
            if c in "eE":
                j = _estring_end(text, i + 2, line)
                toks.append(Token("string", _e_string(text[i + 2 : j], line), i))
            else:
                j = _string_end(text, i + 2, line)
                body = text[i + 2 : j]
                toks.append(Token("bits", body if c in "bB" else _hex_bits(body, line), i))
            i = j + 1
        elif c in _IDENT_START:
            j = i + 1
            while j < n and text[j] in _IDENT_CHARS:
                j += 1
            toks.append(Token("word", text[i:j], i))
            i = j
        elif c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = _number_end(text, i)
            toks.append(Token("number", text[i:j], i))
            i = j
        elif c == "$":
            j = i + 1
            while j < n and text[j] in _IDENT_CHARS and text[j] != "$":
                j += 1
            if j >= n or text[j] != "$" or (j > i + 1 and text[i + 1] in _DIGITS):
                raise ScriptError("only literal values can be loaded, found a parameter", line, text[i : i + 20])
            tag = text[i : j + 1]
            k = text.find(tag, j + 1)
            if k < 0:
                raise ScriptError("unterminated dollar-quoted string", line)
            toks.append(Token("string", text[j + 1 : k], i))
            i = k + len(tag)
        elif c == ":" and text.startswith("::", i):
            toks.append(Token("punct", "::", i))
            i += 2
        else:
            toks.append(Token("punct", c, i))
            i += 1
    return toks


def _hex_bits(body: str, line: int) -> str:
    """X'1F' as PostgreSQL reads it: four bits for each hex digit ('00011111')."""
    if any(d not in _HEX for d in body):
        raise ScriptError("invalid hexadecimal digit in a bit-string literal", line, f"X'{body[:60]}'")
    return "".join(_NIBBLES[d] for d in body)


_NIBBLES = {d: format(int(d, 16), "04b") for d in _HEX}


def _skip_block(text: str, i: int, line: int) -> int:
    depth, j = 1, i + 2
    opens, closes = _Find(text, "/*"), _Find(text, "*/")
    while depth:
        a, b = opens.at(j), closes.at(j)
        if b < 0:
            raise ScriptError("unterminated comment", line)
        if 0 <= a < b:
            depth, j = depth + 1, a + 2
        else:
            depth, j = depth - 1, b + 2
    return j


def _string_end(text: str, j: int, line: int) -> int:
    """Index of the quote closing a '...' string whose body starts at j."""
    while True:
        k = text.find("'", j)
        if k < 0:
            raise ScriptError("unterminated quoted string", line, text[max(0, j - 1) : j + 59])
        if text.startswith("''", k):
            j = k + 2
            continue
        return k


def _estring_end(text: str, j: int, line: int) -> int:
    quote, backslash = _Find(text, "'"), _Find(text, "\\")
    while True:
        k = quote.at(j)
        b = backslash.at(j)
        if 0 <= b < k:
            j = b + 2
            continue
        if k < 0:
            raise ScriptError("unterminated quoted string", line, text[max(0, j - 2) : j + 58])
        if text.startswith("''", k):
            j = k + 2
            continue
        return k


def _number_end(text: str, i: int) -> int:
    n = len(text)
    j = i
    while j < n and text[j] in _DIGITS:
        j += 1
    if j < n and text[j] == ".":
        j += 1
        while j < n and text[j] in _DIGITS:
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and text[k] in _DIGITS:
            while k < n and text[k] in _DIGITS:
                k += 1
            j = k
    return j
