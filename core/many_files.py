"""Many files, one table: `--commit per-file`.

A folder, a glob or a list of files (core.sources.many) loads as one source: under
`single` all files go in one transaction (all or nothing), under `per-batch` batch by
batch with resume, as one file would. `per-file` commits every file on its own: each is a
load of its own (every strategy's fast path, the file's own reject file), so a bad file
rolls back alone and leaves the files before it loaded; the book records each file as it
commits, and `--resume` goes on with the first file not loaded. What one load of many files
says before and after its run is core.load.many.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import checkpoint as ck
from core.cancel import CancelToken
from core.errors import SluiceError, UnfinishedRun
from core.events import Phase, Progress
from core.load.many import file_json
from core.result import LoadResult
from core.sources.many import FileCount, ManySource, is_many
from core.spec import CommitMode, LoadMode, LoadSpec

if TYPE_CHECKING:
    from core.load.context import RunContext
    from core.load.job import Foresight, LoadJob


def make_job(spec: LoadSpec, **kwargs: Any) -> LoadJob | EachFileJob:
    """The job for `spec`: one LoadJob, or, for `--commit per-file` over many files, one per file."""
    from core.load.job import LoadJob

    if spec.commit is CommitMode.PER_FILE and is_many(spec.source.path) and not kwargs.get("dry_run"):
        return EachFileJob(spec, **kwargs)
    return LoadJob(spec, **kwargs)


class EachFileJob:
    """`--commit per-file`: every file a LoadJob of its own, each committed on its own."""

    chosen: Any = None  # auto's pick is each file's own (said in the log)

    def __init__(
        self,
        spec: LoadSpec,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        cancel: CancelToken | None = None,
        resume: bool = False,
        restart: bool = False,
        dry_run: bool = False,
    ) -> None:
        self.spec = spec
        self.on_progress = on_progress or (lambda _p: None)
        self.on_log = on_log or (lambda _m: None)
        self.cancel = cancel or CancelToken()
        self.resume, self.restart = resume, restart
        self._t0 = 0.0
        self._base = (0, 0, 0, 0)  # rows read, loaded, rejected and bytes of the files done
        self._total_bytes = 0

    @property
    def rows_read(self) -> int:
        """Source rows read so far: the files done, and the file being loaded (as last reported)."""
        return self._base[0] + self._current_read

    _current_read = 0

    def _one(self, path: str, options: Any, maps: Any, mode: LoadMode, reject: str | None) -> LoadSpec:
        spec = self.spec
        return replace(spec, source=replace(options, path=path), commit=CommitMode.SINGLE, columns=maps,
                       reject_file=reject, target=replace(spec.target, mode=mode,
                                                          ddl=spec.target.ddl if mode is LoadMode.CREATE else None))

    def foresee(self) -> Foresight:
        from core.load.job import LoadJob

        seen = LoadJob(replace(self.spec, commit=CommitMode.SINGLE)).foresee()
        return replace(seen, protocol="per-file", reason=(seen.reason + "; " if seen.reason else "")
                       + "each file commits on its own")

    def _progress(self, p: Progress) -> None:
        read, loaded, rejected, done = self._base
        self._current_read = p.rows_read
        phase = Phase.LOADING if p.phase in (Phase.DONE, Phase.CONNECTING, Phase.PREPARING, Phase.FINISHING) \
            else p.phase
        self.on_progress(Progress(phase, read + p.rows_read, loaded + p.rows_loaded, rejected + p.rows_rejected,
                                  done + p.bytes_read, self._total_bytes, time.monotonic() - self._t0, p.message))

    def run(self) -> LoadResult:
        from core.db import TableRef, connect, resolve_dsn
        from core.load.job import LoadJob
        from core.plan import plan_load

        self._t0 = time.monotonic()
        spec = self.spec
        ref = TableRef(spec.target.table, spec.target.schema)
        with connect(resolve_dsn(spec.dsn), autocommit=True) as ctl:
            plan = plan_load(replace(spec, source=replace(spec.source)), ctl)  # every file checked, nothing sent
            source = plan.source
            assert isinstance(source, ManySource)
            ref = plan.target
            self._total_bytes = source.size
            # A new table's columns and types from every file's sample, the same for each file.
            maps = spec.columns or (plan.maps if not plan.exists else None)
            run_key = ck.load_key(spec.source.path, ref)
            done = self._earlier(ctl, ref, run_key, source)
            self.on_log(f"{source.describe_files()}, each committed on its own")
            for f in source.empty:
                self.on_log(f"{f}: empty (0 bytes), passed over")
            counts: list[dict[str, Any]] = []
            strategy = spec.strategy
            first_reject: str | None = None
            twice = False  # a file went over several streams through a staging table
            loaded_any = bool(done)  # create or truncate: with the first file that loads (in this run or the last)
            for part in source.parts:
                key = _mark_key(run_key, part.path)
                if str(part.path) in done:
                    mark = done[str(part.path)]
                    self.on_log(f"{part.path}: loaded by the earlier run ({mark.rows_loaded:,} rows); skipped")
                    counts.append(file_json(FileCount(str(part.path), mark.rows_done, mark.rows_loaded,
                                                  mark.rows_rejected)) | {"skipped": True})
                    self._add(mark.rows_done, mark.rows_loaded, mark.rows_rejected, part.size)
                    continue
                mode = spec.target.mode
                if loaded_any and mode in (LoadMode.CREATE, LoadMode.TRUNCATE):
                    mode = LoadMode.APPEND  # the table was made (or emptied) with the first file
                reject = _reject_for(spec.reject_file, part.path, len(source.parts))
                job = LoadJob(self._one(str(part.path), ManySource.settled(part), maps, mode, reject),
                              on_progress=self._progress, on_log=self.on_log, cancel=self.cancel)
                fingerprint = ck.fingerprint(part.path)

                def file_mark(conn: Any, run: RunContext, key: str = key, path: Path = part.path,
                              fp: str = fingerprint) -> None:
                    _mark(conn, ref, key, path, fp, run.spec.strategy,
                          (run.rows_read, run.rows_loaded, run.rows_rejected))

                job.ctx.file_mark = file_mark  # written in the file's own commit (RunContext.mark_file)
                try:
                    result = job.run()
                except SluiceError as exc:
                    raise self._stopped(exc, part.path, counts) from None
                loaded_any = True
                strategy = result.strategy
                if job.ctx.file_mark is not None:  # several streams' commit: just after it
                    with ctl.transaction():
                        _mark(ctl, ref, key, part.path, fingerprint, result.strategy,
                              (result.rows_read, result.rows_loaded, result.rows_rejected))
                first_reject = first_reject or result.reject_file
                twice = twice or result.writes_twice
                count = FileCount(str(part.path), result.rows_read, result.rows_loaded, result.rows_rejected)
                self.on_log(count.describe() + (f" (rejects: {result.reject_file})" if result.reject_file else ""))
                counts.append(file_json(count, result.reject_file))
                self._add(result.rows_read, result.rows_loaded, result.rows_rejected, part.size)
            ck.finish(ctl, ref, run_key)
        read, loaded, rejected, size = self._base
        seconds = time.monotonic() - self._t0
        self.on_progress(Progress(Phase.DONE, read, loaded, rejected, size, self._total_bytes, seconds))
        by_file = {c["file"]: c for c in counts}
        counts = [by_file.get(str(f)) or file_json(FileCount(str(f), 0, 0, 0, empty=True)) for f in source.files
                  if str(f) in by_file or f in source.empty]  # in file order, the empty ones said
        before = sum(c["rows_loaded"] for c in counts if c.get("skipped"))
        return LoadResult(strategy, read, loaded, rejected, seconds, size, first_reject, files=tuple(counts),
                          loaded_before=before, resumed_from=sum(c["rows_read"] for c in counts if c.get("skipped")),
                          writes_twice=twice)

    def _stopped(self, exc: SluiceError, path: Path, counts: list[dict[str, Any]]) -> SluiceError:
        """A file that failed (or was stopped): it rolled back alone; the files before it stay, which
        the error says (and carries as `files_kept`: files, rows) so that the CLI and the window say so."""
        kept, rows = len(counts), sum(c["rows_loaded"] for c in counts)
        s = "" if kept == 1 else "s"
        why = str(exc)
        self.on_log(f"{path}: not loaded ({why}); the {kept} file{s} before it stay loaded")
        if kept and not isinstance(exc, UnfinishedRun):
            exc.args = (f"{why}; {path.name} was rolled back, the {kept} file{s} before it stay loaded "
                        f"({rows:,} rows): --resume goes on from {path.name}", *exc.args[1:])
        exc.files_kept = (kept, rows, path.name, why)  # type: ignore[attr-defined]
        return exc

    def _add(self, read: int, loaded: int, rejected: int, size: int) -> None:
        self._current_read = 0
        r, lo, re, b = self._base
        self._base = (r + read, lo + loaded, re + rejected, b + size)

    def _earlier(self, ctl: Any, ref: Any, run_key: str, source: ManySource) -> dict[str, ck.Checkpoint]:
        """The files an unfinished earlier per-file run committed (resume), or none (a new run)."""
        ck.ensure_book(ctl, ref)
        earlier = ck.read(ctl, ref, run_key)
        unfinished = earlier is not None and not earlier.finished
        marks = ({str(p.path): ck.read(ctl, ref, _mark_key(run_key, p.path)) for p in source.parts} if unfinished
                 else {})
        done = {path: m for path, m in marks.items() if m is not None and m.finished}
        if unfinished and self.restart:
            self.on_log(f"an earlier per-file run of these files loaded {len(done)} of them; starting again from "
                        "the first file as asked")
            done = {}
        elif unfinished and not self.resume:
            names = ", ".join(Path(p).name for p in done) or "none of them"
            raise UnfinishedRun(
                f"an earlier per-file run of these files stopped after loading {len(done)} of {len(source.parts)} "
                f"({names}). Run again with --resume to load the others, or --restart to load every file again "
                "(files it committed stay in the table)",
                described=f"an earlier per-file run loaded {len(done)} of {len(source.parts)} files",
                rows_done=sum(m.rows_done for m in done.values()),
            )
        elif self.resume and not unfinished:
            self.on_log("nothing to resume: no unfinished per-file run of these files; starting from the first file")
        for path, m in list(done.items()):
            if m.fingerprint != ck.fingerprint(path):
                self.on_log(f"{path} changed since the earlier run loaded it; it is loaded again")
                del done[path]
        if not unfinished or self.restart:
            ck.start(ctl, ref, run_key, str(source.path), "per-file", self.spec.strategy)
        return done


def _mark(conn: Any, ref: Any, key: str, path: Path, fingerprint: str, strategy: str,
          rows: tuple[int, int, int]) -> None:
    """One file of a per-file run marked loaded, with its rows read, loaded and rejected."""
    read, loaded, rejected = rows
    ck.start(conn, ref, key, str(path), fingerprint, strategy)
    ck.advance(conn, ref, key, rows_done=read, rows_loaded=loaded, rows_rejected=rejected, bytes_done=0,
               reject_bytes=0, expect_rows_done=0)
    ck.finish(conn, ref, key)


def _mark_key(run_key: str, path: Path) -> str:
    """The book's row for one file of a per-file run: its own, not a one-file load's of the same file."""
    return hashlib.sha256(f"{run_key}\n{path.resolve()}".encode()).hexdigest()[:32]


def _reject_for(asked: str | None, path: Path, files: int) -> str | None:
    """One reject file per file: a named one gets the file's name in it (rejects.csv -> rejects.jan.csv)."""
    if not asked or files <= 1:
        return asked
    p = Path(asked)
    return str(p.with_name(f"{p.stem}.{path.stem}{p.suffix}"))
