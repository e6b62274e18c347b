"""The few kinds of failure a person can act on.

Driver and parser errors are translated into these at the boundary, so the CLI
and the window can show a sentence instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class SluiceError(Exception):
    """Base of every error Sluice explains to the user."""

    exit_code = 1


class ConfigError(SluiceError):
    """Bad arguments, an impossible combination of options, a bad profile."""

    exit_code = 2


class UnfinishedRun(ConfigError):
    """An earlier per-batch run of the same load stopped midway; resume or restart it."""

    def __init__(self, message: str, *, described: str, rows_done: int) -> None:
        self.described = described  # the earlier run in words, without command-line advice
        self.rows_done = rows_done
        super().__init__(message)


class SourceError(SluiceError):
    """The source file cannot be read or parsed (missing, unreadable, malformed)."""

    exit_code = 2

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = path + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


class BadRecordError(SourceError):
    """A malformed record (ragged, undecodable, a quote that never closes) stopped the load: the
    data is at fault, not the arguments, so the exit status is 1 (core.first_bad)."""

    exit_code = 1


class RefusedValue(SourceError):
    """A value the client refuses before sending it (a relative date word, core.relative_dates)
    under the `abort` policy: a bad row (exit status 1), not an unreadable file."""

    exit_code = 1


class ConnectError(SluiceError):
    """The database cannot be reached or refused the login."""


class Cancelled(SluiceError):
    """The user stopped the job."""

    def __init__(self, message: str = "cancelled by the user") -> None:
        super().__init__(message)


class SourceChanged(SluiceError):
    """The source file changed or vanished while it was being loaded."""


@dataclass(frozen=True)
class RowProblem:
    """Where a bad row sits in the source and why the server refused it."""

    path: str
    row: int  # 0-based data row index in the source
    line: int | None  # 1-based physical line in the file, when known
    column: str | None
    value: str | None
    reason: str

    def describe(self) -> str:
        where = f"{self.path}, line {self.line}" if self.line else f"{self.path}, row {self.row + 1}"
        col = f", column {self.column!r}" if self.column else ""
        val = f", value {_short(self.value)}" if self.value is not None else ""
        return f"{where}{col}{val}: {self.reason}"


class BadRowError(SluiceError):
    """A row the server refused under the `abort` policy; the load was rolled back."""

    def __init__(self, problem: RowProblem, committed: int | None = None) -> None:
        self.problem = problem
        self.committed = committed
        tail = (
            " (nothing was loaded)"
            if committed is None
            else f" (that batch was rolled back; the {committed:,} rows committed before it stay in the table)"
        )
        super().__init__(problem.describe() + tail)


class TooManyRejects(SluiceError):
    """The `skip` policy hit its reject limit; the load was stopped."""


class LoadFailed(SluiceError):
    """Any other database failure during the load, with the server's message."""


class ResumableStop(LoadFailed):
    """A per-batch load stopped (e.g. the connection kept failing); `--resume` continues it."""


def _short(value: str | None, limit: int = 80) -> str:
    if value is None:
        return "NULL"
    text = value if len(value) <= limit else value[:limit] + f"... ({len(value)} chars)"
    return repr(text)


class ParseInstead(Exception):
    """COPY cannot take the file's own bytes here (their shape, a quote it would read otherwise,
    a refusal during a warm start): the load goes through the parser instead, which names a
    bad row exactly. Not a SluiceError: the load catches it and never reports it as such."""
