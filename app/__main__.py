"""`python -m app` opens the window; `python -m app load|run|compare|strategies` run headless."""

from __future__ import annotations

import gc
import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from app.cli import HEADLESS

    if args and args[0] in HEADLESS:
        from app.lazy_imports import import_lazily

        import_lazily("polars")  # the raw CSV path never needs it
        from app.cli import main as cli_main

        code = cli_main(args)
        # The interpreter's exit-time collections walk every object the imports made (psycopg,
        # polars: 30 ms, a fifth of a one-row load). Frozen, they are skipped; atexit handlers
        # still run and files still flush, unlike os._exit.
        gc.freeze()
        return code
    from app.gui import main as gui_main

    code = gui_main(args)
    # Leave without the interpreter's final garbage collection: a PySide6/CPython 3.11
    # refcount bug ("none_dealloc") can abort there after long runs. Settings and
    # screenshots are already written; the embedded server is meant to keep running.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
