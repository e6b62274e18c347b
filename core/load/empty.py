"""An empty file loads 0 rows, with a note, as psql's \\copy and pgloader do (issue 26 item 4).

The plan finds the source empty (core.sources.empty) before any mapping is settled: a saved
mapping cannot name columns the file does not have, and there is nothing to map. The target is
still checked (an append into a missing table is refused as usual); truncate still truncates,
as TRUNCATE followed by \\copy would; create makes no table, for there are no columns to make
it from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core.errors import ConfigError
from core.events import Phase
from core.result import LoadResult
from core.spec import LoadMode

if TYPE_CHECKING:
    from core.load.context import RunContext
    from core.plan import Plan


class EmptyFile(Exception):  # noqa: N818 - a signal to the job, never shown: it becomes a result
    """The plan's source is empty: LoadJob returns load_nothing()'s result instead of loading."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(str(plan.source.path))
        self.plan = plan


def note(run: RunContext, plan: Plan) -> str:
    """What a load of the empty file does, in words (said before the run too)."""
    name = plan.target.display()
    mode = run.spec.target.mode
    if mode is LoadMode.CREATE:
        return f"the file is empty: 0 rows, and no columns to make {name} from, so no table is made"
    if mode is LoadMode.TRUNCATE:
        return f"the file is empty: {name} is truncated and 0 rows loaded (as TRUNCATE and then psql's \\copy would)"
    return f"the file is empty: 0 rows loaded; {name} is left as it was"


def load_nothing(run: RunContext, ctl: psycopg.Connection[Any], plan: Plan) -> LoadResult:
    ref, mode = plan.target, run.spec.target.mode
    if mode is LoadMode.CREATE and plan.exists:
        raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
    if mode is not LoadMode.CREATE and not plan.exists:
        raise ConfigError(f"table {ref.display()} does not exist; use mode create to make it")
    if mode is LoadMode.TRUNCATE and not run.dry_run:
        ctl.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
    said = note(run, plan)
    run.on_log(said)
    run.emit(Phase.DONE, force=True)
    return LoadResult(run.spec.strategy, 0, 0, 0, run.seconds(), 0, note=said)
