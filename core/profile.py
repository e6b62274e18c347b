"""Import profiles: a load's whole set-up as versioned TOML, never with a password."""

from __future__ import annotations

import os
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from core.db import strip_password
from core.errors import ConfigError
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec

VERSION = 1


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """TOML has no null: leave unset options out."""
    return {k: v for k, v in d.items() if v is not None}


def to_toml(spec: LoadSpec, extra: dict[str, Any] | None = None) -> str:
    doc: dict[str, Any] = {"version": VERSION}
    if spec.dsn:
        doc["connection"] = {"dsn": strip_password(spec.dsn)}
    doc["source"] = _clean(asdict(spec.source))
    target = _clean(asdict(spec.target))
    target["mode"] = spec.target.mode.value
    doc["target"] = target
    doc["load"] = _clean(
        {
            "strategy": spec.strategy,
            "batch_rows": spec.batch_rows,
            "workers": spec.workers,
            "commit": spec.commit.value,
            "on_error": spec.on_error.value,
            "reject_file": spec.reject_file,
            "reject_limit": spec.reject_limit,
            "reject_limit_pct": spec.reject_limit_pct,
        }
    )
    if spec.columns is not None:
        doc["columns"] = [_clean(asdict(c)) for c in spec.columns]
    if extra:
        doc.update(extra)
    import tomli_w  # only when a profile is written: a load without one skips it

    return tomli_w.dumps(doc)


def save(spec: LoadSpec, path: str | Path, extra: dict[str, Any] | None = None) -> None:
    p = Path(path)
    p.write_text(to_toml(_source_beside(spec, p.parent), extra), encoding="utf-8")


def _source_beside(spec: LoadSpec, folder: Path) -> LoadSpec:
    """A relative source path (from where the command ran) rewritten from the profile's folder,
    where load() resolves it: `load data/x.csv --save-profile profiles/p.toml` then finds
    data/x.csv again, from any folder, and a profile saved beside its file keeps the bare name."""
    source = Path(spec.source.path)
    if source.is_absolute():
        return spec
    absolute = source.resolve()
    try:
        relative = os.path.relpath(absolute, folder.resolve())
    except ValueError:  # another drive (Windows): no relative path between them
        relative = str(absolute)
    return replace(spec, source=replace(spec.source, path=relative))


def _rows(value: object) -> int | None:
    """A profile's batch size; none given: sized for the strategy when the load starts."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ConfigError(f"profile [load] batch_rows must be a whole number (got {value!r})")


def _pick(cls: type, data: dict[str, Any], section: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"profile [{section}] has unknown keys: {', '.join(sorted(unknown))}")
    return data


def from_toml(text: str, *, base_dir: Path | None = None) -> tuple[LoadSpec, dict[str, Any]]:
    """The spec, and the rest of the document (e.g. [compare]) for callers that want it."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not a valid profile: {exc}") from None
    version = doc.get("version")
    if version != VERSION:
        raise ConfigError(f"profile version {version!r} is not supported (this Sluice reads version {VERSION})")
    try:
        src = SourceOptions(**_pick(SourceOptions, dict(doc["source"]), "source"))
        if base_dir is not None and not Path(src.path).is_absolute():
            src.path = str((base_dir / src.path).resolve())
        tgt = dict(doc["target"])
        tgt["mode"] = LoadMode(tgt.get("mode", "append"))
        target = TargetSpec(**_pick(TargetSpec, tgt, "target"))
        load = dict(doc.get("load", {}))
        spec = LoadSpec(
            source=src,
            target=target,
            strategy=load.pop("strategy", "copy-csv"),
            batch_rows=_rows(load.pop("batch_rows", None)),
            workers=int(load.pop("workers", 2)),
            commit=CommitMode(load.pop("commit", "single")),
            on_error=ErrorPolicy(load.pop("on_error", "abort")),
            reject_file=load.pop("reject_file", None),
            reject_limit=load.pop("reject_limit", None),
            reject_limit_pct=load.pop("reject_limit_pct", None),
            dsn=(doc.get("connection") or {}).get("dsn"),
        )
        if load:
            raise ConfigError(f"profile [load] has unknown keys: {', '.join(sorted(load))}")
        if "columns" in doc:
            spec.columns = [ColumnMap(**_pick(ColumnMap, dict(c), "columns")) for c in doc["columns"]]
    except KeyError as exc:
        raise ConfigError(f"profile is missing [{exc.args[0]}]") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"profile has a bad value: {exc}") from None
    rest = {k: v for k, v in doc.items() if k not in ("version", "connection", "source", "target", "load", "columns")}
    return spec, rest


def load(path: str | Path) -> tuple[LoadSpec, dict[str, Any]]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read profile {p}: {exc.strerror}") from None
    return from_toml(text, base_dir=p.parent)


# The optional [compare] table: the Compare tab's set-up, kept beside the load it measures.
_COMPARE_KEYS: dict[str, tuple[type, ...]] = {
    "strategies": (str,), "batch_rows": (int,), "workers": (int,),  # lists of these
    "sample_rows": (int,), "repeat": (int,), "budget_s": (int, float), "rtt_ms": (int, float),
}
_COMPARE_LISTS = ("strategies", "batch_rows", "workers")


def compare_section(rest: dict[str, Any]) -> dict[str, Any] | None:
    """The validated [compare] table from `from_toml`'s rest, or None when the profile has none."""
    table = rest.get("compare")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError("profile [compare] must be a table")
    unknown = set(table) - set(_COMPARE_KEYS)
    if unknown:
        raise ConfigError(f"profile [compare] has unknown keys: {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {}
    for key, value in table.items():
        kinds = _COMPARE_KEYS[key]
        items = value if key in _COMPARE_LISTS else [value]
        # bool is an int to Python, never to a person writing a profile
        if not isinstance(items, list) or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in items):
            raise ConfigError(f"profile [compare] {key} has a bad value: {value!r}")
        if key != "strategies" and any(v < 0 for v in items):
            raise ConfigError(f"profile [compare] {key} must not be negative: {value!r}")
        out[key] = [*items] if key in _COMPARE_LISTS else value
    if "strategies" in out:
        from core.strategies.catalogue import get_strategy

        for sid in out["strategies"]:
            get_strategy(sid)  # ConfigError for an unknown id
    return out


def load_compare(path: str | Path) -> dict[str, Any] | None:
    """The profile's [compare] table (validated), or None when it has none."""
    return compare_section(load(path)[1])
