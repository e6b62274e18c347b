"""The fast INSERT path's reading: one table's INSERT statements found in blocks of the script.

A block is read with pread and cut after its last ';\\n' (the next one is read ahead on a
helper thread while this one is checked). In it, the statements with a given head are
found and checked in one pass while they are pg_dump's one-row INSERTs (gather's
gather_rows), else by line and quote parity (gather). Nothing here runs Python's
backtracking `re` on the script: the work is str.split and polars (a linear-time regex engine).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import polars as pl

from core.sources.sqlscript.gather import END, Gathered, gather, gather_rows

__all__ = ["BlockReader"]

FAST_LIMIT = 64 << 20  # a statement gathered by quote parity longer than this goes the careful way
MIN_BLOCK, MAX_BLOCK = 1 << 14, 8 << 20  # bytes read per bulk step; small again after a statement it refused


@dataclass
class Block:
    """Bytes of the file read for the bulk path, cut after their last ';\\n'."""

    length: int  # bytes read (fewer than asked: the end of the file)
    cut: int  # bytes up to and including the last ";\n" (all of them at the end of the file)
    text: str | None  # those bytes decoded; None when no ";\n" was found
    parts: pl.Series | None = None  # the text split at ";\n" (what follows the last dropped)

    def statements(self) -> pl.Series:
        if self.parts is None:
            assert self.text is not None
            pieces = self.text.split(END)
            pieces.pop()  # what follows the last ";\n": not a whole statement
            self.parts = pl.Series("s", pieces, dtype=pl.String)
        return self.parts


def read_block(fd: int, start: int, size: int, encoding: str, split: bool) -> Block:
    data = os.pread(fd, size, start)  # no shared file position: a helper thread may read ahead
    cut = len(data) if len(data) < size else data.rfind(b";\n") + 2
    if cut <= 1:
        return Block(len(data), cut, None)
    blk = Block(len(data), cut, str(memoryview(data)[:cut], encoding))
    if split:
        blk.statements()
    return blk


class ReadAhead:
    """One block read, decoded and split on a helper thread; always joined by take()."""

    def __init__(self, fd: int, start: int, size: int, encoding: str, split: bool) -> None:
        self.key = (start, size)
        self.result: Block | BaseException | None = None
        self.thread = threading.Thread(target=self._read, args=(fd, start, size, encoding, split),
                                       name="sluice-sql-ahead", daemon=True)
        self.thread.start()

    def _read(self, fd: int, start: int, size: int, encoding: str, split: bool) -> None:
        try:
            self.result = read_block(fd, start, size, encoding, split)
        except BaseException as exc:  # noqa: BLE001 - the main thread reads the block again and raises
            self.result = exc

    def take(self, start: int, size: int) -> Block | None:
        self.thread.join()
        ok = self.key == (start, size) and isinstance(self.result, Block)
        return self.result if ok and isinstance(self.result, Block) else None


class BlockReader:
    """Blocks of one open script for the fast INSERT path, and the statements of a head found in them.

    The block size grows while the bulk path takes what it is given and is small again after
    it refused a statement (grow(), shrink()); close() joins a block read ahead and not used.
    """

    def __init__(self, fd: int, encoding: str, single_byte: bool) -> None:
        self.fd, self.encoding, self.single_byte = fd, encoding, single_byte
        self.block = MIN_BLOCK
        self.not_single: set[str] = set()  # heads whose statements are not all one row as pg_dump writes it
        self.ahead: ReadAhead | None = None  # the next block, being read on a helper thread

    def gather(self, start: int, head: str, width: int, on_conflict: bool) -> Gathered | None:
        """Statements from `start` on with this head, found in a block; None: no end found by parity."""
        size = self.block
        while True:
            lane = self.one_pass(head, on_conflict)
            blk = self._claim(start, size) or read_block(self.fd, start, size, self.encoding, lane)
            at_eof = blk.length < size
            if blk.text is not None and not at_eof:
                # The next block most likely starts where this one was cut: read and split it
                # on a helper thread while this one is checked (polars lets go of the GIL).
                self.ahead = ReadAhead(self.fd, start + blk.cut, min(self.block * 2, MAX_BLOCK),
                                       self.encoding, lane)
            g = self._gather_block(blk, head, width, on_conflict) if blk.text is not None else None
            if g is not None:
                return g
            if at_eof or size >= FAST_LIMIT:  # no end found by parity: the careful way
                return None
            size *= 4

    def grow(self) -> None:
        """Every statement of the last block was taken: read more at once next time."""
        self.block = min(self.block * 2, MAX_BLOCK)

    def shrink(self) -> None:
        """A statement was refused: read little again."""
        self.block = MIN_BLOCK

    def close(self) -> None:
        self._claim(-1, 0)  # a block read ahead and not used: its thread is joined

    def one_pass(self, head: str, on_conflict: bool) -> bool:
        """Are this head's statements still taken by gather_rows (one-row pg_dump INSERTs)?"""
        return not on_conflict and head not in self.not_single

    def _gather_block(self, blk: Block, head: str, width: int, on_conflict: bool) -> Gathered | None:
        """The block's statements: one-row statements found and checked in one pass while that works."""
        assert blk.text is not None
        if self.one_pass(head, on_conflict):
            g = gather_rows(blk.statements(), head, width, single_byte=self.single_byte)
            if isinstance(g, Gathered):
                return g
            if not g:
                self.not_single.add(head)  # rows-per-insert or odd values: quote parity from now on
        return gather(blk.text, head, single_byte=self.single_byte)

    def _claim(self, start: int, size: int) -> Block | None:
        """The block read ahead, if it is the one asked for; any other is dropped (its thread joined)."""
        ahead, self.ahead = self.ahead, None
        return ahead.take(start, size) if ahead is not None else None
