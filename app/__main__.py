"""`python -m app` opens the window; `python -m app load|run|compare|strategies` run headless."""

from __future__ import annotations

import gc
import os
import sys
import threading

# numpy's OpenBLAS starts a thread per extra core at import, and on this 2-core machine it spun
# for about 0.1 s of CPU there, taken from the server and the parser. Sluice does no linear
# algebra; one thread keeps that CPU for the load (`import numpy` then a 0.3 s sleep: 0.18 -> 0.07 CPU-s).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# The imports of a load (psycopg, then polars, pyarrow and pgpq on copy-binary's warm-up thread)
# leave some 60,000 objects that no collection frees, yet the cyclic collector ran about 150 times
# over them (a full pass of 25 ms among them), each time holding the GIL that the reader and the
# sender wait for: 40-60 ms of a 1M-row load's 0.6-0.9 s. It is paused while they run, then the
# objects they made are frozen out of later passes. A load made no cyclic garbage after its
# imports (1,037 objects at exit, for 1M rows as for 5M), so the pause holds back nothing that grows.
# (1M-row corpus files, 7 interleaved rounds against the collector as it was: nulls 0.82 -> 0.77 s,
# narrow 0.58 -> 0.55, temporal 1.03 -> 0.96, quoted 0.88 both.)
GC_PAUSE_S = 1.5


def _pause_collection(seconds: float = GC_PAUSE_S) -> threading.Timer:
    """Collection off now, and back on `seconds` later with every object made till then frozen."""

    def resume() -> None:
        gc.freeze()
        gc.enable()

    gc.disable()
    timer = threading.Timer(seconds, resume)
    timer.daemon = True
    timer.start()
    return timer


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from app.cli import HEADLESS

    if args and args[0] in HEADLESS:
        _pause_collection()
        from app.lazy_imports import import_lazily

        import_lazily("polars")  # the raw CSV path never needs it
        from app.cli import main as cli_main

        try:
            code = cli_main(args)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader of our output left (`strategies | head -1`): nothing more to say to it.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 0
        return code  # (`python -m app` then leaves by _leave(), without the interpreter's teardown)
    from app.gui import main as gui_main

    code = gui_main(args)
    # Leave without the interpreter's final garbage collection: a PySide6/CPython 3.11
    # refcount bug ("none_dealloc") can abort there after long runs. Settings and
    # screenshots are already written; the embedded server is meant to keep running.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _leave(code: int) -> None:
    """End a headless command that returned: its exit handlers run (logging's, the embedded
    server's handle list) and its output flushed, then out without the interpreter's teardown,
    which freed every module and buffer one by one: 15 ms after a raw CSV load, 35-40 ms once
    polars and pyarrow were loaded (psql ends in 1 ms). The load has committed, the history is
    written and closed, and no thread of the load is left (the collector's timer is a daemon)."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass  # (a reader that left: main() already sent stdout to /dev/null)
    os._exit(code)


if __name__ == "__main__":
    from app.cli import HEADLESS

    _code = main()
    if sys.argv[1:2] and sys.argv[1] in HEADLESS:
        _leave(_code)  # (the window's main() leaves by os._exit itself)
    sys.exit(_code)
