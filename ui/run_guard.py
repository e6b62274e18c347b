"""What a run would do to tables that already hold rows, judged from facts read just before it starts.

Truncate empties a table, upsert overwrites rows, append adds to a table someone may not expect
to grow, and create remakes a table that held rows when Sluice last saw it: each is asked first,
naming the table, its rows now and the file's rows, with the destructive word on the button. A run
whose mode cannot apply (a table that is not there, or is there for create) is refused with the
reason. Qt-free: the run controller shows the question.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.db import TableRef
from core.spec import LoadMode, LoadSpec
from core.target_facts import TableSize, TargetFacts


@dataclass(frozen=True)
class Verdict:
    """Run, ask first, or refuse. `removed`: rows truncate takes out of the tables (for the summary)."""

    refusal: str = ""
    title: str = ""
    question: str = ""
    yes: str = ""
    removed: int = 0
    destructive: bool = False  # rows go or are overwritten: Cancel is the default button


def exists_text(ref: TableRef) -> str:
    """Why mode create cannot run: said in the plan line and when Run is pressed."""
    return (f"{ref.display()} already exists, and mode create makes a new table: choose append, truncate or upsert "
            "(or name another table).")


def judge(
    spec: LoadSpec,
    facts: TargetFacts,
    file_rows: str,
    *,
    several: bool = False,
    asked_append: bool = False,
    seen: dict[TableRef, TableSize] | None = None,
    resume: bool = False,
    restart: bool = False,
    where: str = "this server",
    script_rows: str = "",
) -> Verdict:
    """The verdict for `spec` on `facts` (its target tables as the server has them now).

    `file_rows`: the file's rows in words ("500 rows", "about 2,100 rows"); `several`: a script's tables
    load together; `asked_append`: this file's append into these tables was already said yes to;
    `seen`: sizes this window read earlier on the same connection (a table gone since was dropped);
    `resume`: the run continues an earlier one, which already did what its mode does first; `restart`: it
    starts an unfinished one over; `script_rows`: a script's rows per table in words ("public.a: 2, public.b: 5").
    """
    mode = spec.target.mode
    missing = facts.missing()
    full = facts.with_rows()
    if facts.unfinished and not restart:
        return Verdict()  # the run resumes, or the engine says an earlier one is unfinished: nothing new is done
    if mode is LoadMode.CREATE:
        there = [ref for ref in facts.sizes if ref not in missing]
        if there:
            return Verdict(refusal=exists_text(there[0]))
        dropped = {ref: size for ref, size in (seen or {}).items() if ref in facts.sizes and size.rows > 0}
        if dropped and not resume:
            ref, size = next(iter(dropped.items()))
            return Verdict(
                title="Create a table that was dropped",
                question=(f"{ref.display()} held {size.text()} when Sluice last looked on {where}, and it is not "
                          f"there now (dropped since?).\n\nCreate it anew with the file's {file_rows}?"),
                yes="Create table")
        return Verdict()
    if missing:
        names = ", ".join(ref.display() for ref in missing)
        if several:
            return Verdict(refusal=f"{names} {'does' if len(missing) == 1 else 'do'} not exist on {where}; the "
                                   "script fills tables, it does not create them: create them first.")
        return Verdict(refusal=f"{names} does not exist on {where}, and mode {mode.value} loads into a table that "
                               "exists: choose mode create to make it (or name another table).")
    if not full or resume:
        return Verdict()
    each = ", ".join(f"{ref.display()} ({size.text()})" for ref, size in full.items())
    ref, size = next(iter(full.items()))
    if mode is LoadMode.TRUNCATE:
        removed = sum(s.rows for s in full.values())
        if len(full) == 1:
            question = (f"Truncate {ref.display()}? Its {size.text()} will be removed, and the file's {file_rows} "
                        "loaded in their place.")
        else:
            question = (f"Truncate {len(full)} tables: {each}? Their rows will be removed, and the script's "
                        f"{file_rows} ({script_rows}) loaded in their place.")
        question += "\n\nWith commit single, a failed or stopped run leaves them as they were."
        return Verdict(title="Truncate a table that has rows", question=question, yes="Truncate and load",
                       removed=removed, destructive=True)
    if mode is LoadMode.UPSERT:
        keys = ", ".join(spec.target.key) or "its key"
        return Verdict(
            title="Upsert into a table that has rows",
            question=(f"Upsert {file_rows} into {ref.display()} ({size.text()})?\n\nRows whose {keys} is "
                      "already there are overwritten with the file's values."),
            yes="Upsert", destructive=True)
    if asked_append:
        return Verdict()
    question = f"Append {file_rows} to {ref.display()} ({size.text()})?"
    if several:
        question = (f"Append {file_rows} to the script's {len(facts.sizes)} tables ({script_rows})?\n\n"
                    f"These already hold rows: {each}.")
    return Verdict(title="Append to a table that has rows", question=question, yes="Append")
