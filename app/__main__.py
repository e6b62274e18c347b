"""`python -m app` opens the window; `python -m app load|run|compare|strategies` run headless."""

from __future__ import annotations

import sys

from app.cli import HEADLESS
from app.cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in HEADLESS:
        return cli_main(args)
    from app.gui import main as gui_main

    return gui_main(args)


if __name__ == "__main__":
    sys.exit(main())
