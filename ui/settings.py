"""App settings (recent files, last folder, saved connections): typed, versioned, no secrets."""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
        path = config_dir() / "settings.toml"
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            return cls()
        if data.get("version") != VERSION:
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

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
