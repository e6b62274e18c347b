"""Many files read as one source (core.sources.many): what the job says of them before the run,
and what each file gave after it. The job calls these; `--commit per-file` (a job per file) is
core.many_files, above the load.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.sources.many import FileCount, ManySource
from core.spec import CommitMode

if TYPE_CHECKING:
    from collections.abc import Callable

    from core.load.context import RunContext
    from core.plan import Plan
    from core.result import LoadResult


def settled(ctx: RunContext, plan: Plan) -> ManySource | None:
    """Said before the run: the files, in their order, and any read by name in another order.
    `per-file` given to one load means one transaction (make_job runs files one by one).
    The source when it is many files, for `report`."""
    if ctx.spec.commit is CommitMode.PER_FILE:
        ctx.spec = replace(ctx.spec, commit=CommitMode.SINGLE)
    source = plan.source
    if not isinstance(source, ManySource):
        return None
    if ctx.spec.reject_file is None:  # not `<pattern>.rejects.csv`, a name with a * in it
        ctx.spec = replace(ctx.spec, reject_file=source.reject_default())
    how = {CommitMode.SINGLE: "in one transaction", CommitMode.PER_BATCH: "committed batch by batch"}
    ctx.on_log(f"{source.describe_files()} read as one source, {how.get(ctx.spec.commit, '')}")
    for f in source.empty:
        ctx.on_log(f"{f}: empty (0 bytes), passed over")
    if source.reordered:
        ctx.on_log(f"columns in another order in {', '.join(source.reordered)}: taken by name")
    return source


def report(source: ManySource | None, on_log: Callable[[str], None], result: LoadResult) -> LoadResult:
    """A finished load of many files: each file's rows read, loaded and rejected, in the log and the result."""
    if source is None:
        return result
    counts = source.counts(_rejected_by_file(result.reject_file), result.rows_loaded)
    for c in counts:
        on_log(c.describe())
    return replace(result, files=tuple(file_json(c) for c in counts))


def _rejected_by_file(reject_file: str | None) -> dict[str, int]:
    """How many of a reject file's records each file has (its `file` column)."""
    if not reject_file or not Path(reject_file).is_file():
        return {}
    with open(reject_file, newline="", encoding="utf-8") as f:
        return dict(Counter(r.get("file") or "" for r in csv.DictReader(f)))


def file_json(c: FileCount, reject_file: str | None = None) -> dict[str, Any]:
    """One file's counts as --json's `files` lists them."""
    d: dict[str, Any] = {"file": c.file, "rows_read": c.rows_read, "rows_loaded": c.rows_loaded,
                         "rows_rejected": c.rows_rejected}
    if c.empty:
        d["empty"] = True
    if reject_file:
        d["reject_file"] = reject_file
    return d
