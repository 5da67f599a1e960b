"""Where the settings file is, and how chatagent makes the folders it keeps
its settings and run state in. Its own module, with no dependency beyond
platformdirs: `chatagent ask` finds a running daemon from it before it has
loaded the settings machinery (`daemon.early`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

CONFIG_ENV = "CHATAGENT_CONFIG"  # the settings file's path, when not the default


def config_dir() -> Path:
    """chatagent's own folder in the platform's config directory
    (`$XDG_CONFIG_HOME/chatagent` on Linux), whatever CHATAGENT_CONFIG says."""
    from platformdirs import user_config_path

    return user_config_path("chatagent", appauthor=False)


def config_path() -> Path:
    """The settings file: $CHATAGENT_CONFIG, else config.toml in `config_dir()`."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    return config_dir() / "config.toml"


def make_private_dirs(path: Path) -> None:
    """Create `path` and whichever of its parents are missing, each 0700
    whatever the umask (the XDG rule for the folders an application makes).
    Folders that exist already are left as they are."""
    missing: list[Path] = []
    while not os.path.lexists(path):
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, left as it is
        os.chmod(folder, stat.S_IRWXU)  # mkdir's mode is narrowed by the umask, never widened


def tighten_dir(path: Path) -> None:
    """Close `path`, a folder of this user's, to everyone else (0700)."""
    st = os.stat(path)
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
