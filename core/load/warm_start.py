"""Warm start: the server loads the file's first records while the client's encoder loads.

copy-binary needs polars, pyarrow, numpy and pgpq before its first tuple can be encoded:
some 0.2 s of imports on one core, while the server, on the other, has nothing to do. When
the file's own bytes could go to COPY (a CSV mapped column for column, `abort` on error),
copy-binary builds its encoder on a thread and, meanwhile, sends the first records as they
are, in 1 MB chunks of one CSV COPY statement; from the first chunk read after the encoder
is ready, the rest is parsed, typed and sent as binary COPY in the same transaction. Every
value reaches the table as PostgreSQL's own CSV input or as the exactly typed binary form,
which the fidelity tests hold to be the same.

Only for files of WARM_MIN_BYTES or more. A refusal inside the raw part is reported by
running the load again through the parser (core.load.protocols.single turns it into
ParseInstead), which names the row exactly; one after the switch is named by its row, the
raw part's records counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from core import mapping as mp
from core.events import Phase
from core.first_bad import in_file_order
from core.load.stages import Prefetch, send_prepared
from core.sources.abilities import RawCsvSource
from core.sources.base import Batch, RawChunk
from core.strategies.abilities import WarmStarts

if TYPE_CHECKING:
    from core.load.context import RunContext
    from core.plan import Plan
    from core.strategies.base import Strategy

# Below this size the whole file would go as CSV before the encoder is ready: such a file
# loads as copy-binary always did, every batch typed (the fidelity tests' files among them).
WARM_MIN_BYTES = 32 << 20


def stream_warm(run: RunContext, strategy: Strategy, plan: Plan) -> None:
    source = plan.source
    assert isinstance(source, RawCsvSource) and isinstance(strategy, WarmStarts)  # the load chose both for it
    ready = strategy.ready
    maps, prepare = plan.maps, strategy.prepare
    warm_rows = 0

    def encode(items: Iterator[RawChunk | Batch]) -> Iterator[tuple[RawChunk | Batch, Any, object]]:
        for item in items:
            if isinstance(item, RawChunk):
                yield item, None, item.records
            else:
                mapped = mp.apply(item.frame, maps)
                yield item, mapped, prepare(mapped)

    # Queues of one: the reader decides raw or parsed as it reads a chunk, so each chunk
    # queued ahead is one more promised to the slower CSV path once the encoder is ready.
    with Prefetch(source.raw_then_batches(ready.is_set, run.spec.rows_per_batch), depth=1) as items, \
            Prefetch(encode(iter(items)), depth=1, name="sluice-encoder") as encoded:
        for item, mapped, prepared in in_file_order(encoded, strategy, reparse=True):
            run.cancel.check()
            source.check_unchanged()
            if isinstance(item, RawChunk):
                assert isinstance(prepared, int)
                strategy.write_warm(item.data, prepared)
                run.rows_read += prepared
                run.rows_loaded += prepared
                warm_rows += prepared
                run.bytes_read = item.bytes_read
                run.emit(Phase.LOADING)
            else:
                send_prepared(run, strategy, item, mapped, prepared)
    source.check_unchanged()
    if warm_rows:
        run.on_log(f"copy-binary: the first {warm_rows:,} rows went as the file's own CSV while the binary "
                   "encoder loaded (warm start)")
