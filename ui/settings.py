"""App settings (recent files, last folder, saved connections) and the window's last place: typed, versioned,
no secrets."""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import tomli_w

from core.db import strip_password

VERSION = 1


def config_dir() -> Path:
    d = Path(os.environ.get("SLUICE_CONFIG_DIR") or platformdirs.user_config_dir("sluice"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass
class Settings:
    version: int = VERSION
    last_folder: str = ""
    recent_files: list[str] = field(default_factory=list)
    recent_profiles: list[str] = field(default_factory=list)
    connections: dict[str, str] = field(default_factory=dict)  # name -> DSN without password
    reject_folder: str = ""  # where the window writes reject files; "": <data dir>/rejects

    @classmethod
    def load(cls) -> Settings:
        data = _read("settings.toml")
        return cls() if data is None else cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def save(self) -> None:
        self.connections = {k: strip_password(v) for k, v in self.connections.items()}
        (config_dir() / "settings.toml").write_text(tomli_w.dumps(asdict(self)), encoding="utf-8")

    def remember(self, kind: str, path: str) -> None:
        items: list[str] = getattr(self, kind)
        if path in items:
            items.remove(path)
        items.insert(0, path)
        del items[10:]
        self.last_folder = str(Path(path).parent)


@dataclass
class WindowState:
    """The main window's last geometry and splitter positions (Qt's saveGeometry / saveState as base64).

    Kept in window.toml, apart from the settings and the profiles: a profile opened on another
    screen does not move the window, and a lost window.toml only costs the first start's size.
    """

    version: int = VERSION
    geometry: str = ""
    splitters: dict[str, str] = field(default_factory=dict)  # splitter name -> its saved state

    @classmethod
    def load(cls) -> WindowState:
        data = _read("window.toml")
        if data is None:
            return cls()
        geometry, splitters = data.get("geometry", ""), data.get("splitters", {})
        if not isinstance(geometry, str) or not isinstance(splitters, dict):
            return cls()
        return cls(geometry=geometry, splitters={str(k): str(v) for k, v in splitters.items()})

    def save(self) -> None:
        (config_dir() / "window.toml").write_text(tomli_w.dumps(asdict(self)), encoding="utf-8")


def _read(name: str) -> dict[str, Any] | None:
    """A settings file of this version, or None (missing, unreadable, or of another version)."""
    try:
        data = tomllib.loads((config_dir() / name).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return data if data.get("version") == VERSION else None
