"""Where the settings file is. Its own module, with no dependency beyond
platformdirs: `chatagent ask` finds a running daemon from it before it has
loaded the settings machinery (`daemon.early`)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_ENV = "CHATAGENT_CONFIG"  # the settings file's path, when not the default


def config_path() -> Path:
    """The settings file: $CHATAGENT_CONFIG, else config.toml in the platform's config directory."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    from platformdirs import user_config_path

    return user_config_path("chatagent", appauthor=False) / "config.toml"
