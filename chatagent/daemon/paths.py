"""Where a user's daemon lives, and who may use it.

One directory per user: `$CHATAGENT_DAEMON_DIR` when set, else the platform's
user runtime directory (`$XDG_RUNTIME_DIR/chatagent` on Linux), else `run/`
beside the settings file. It holds `daemon.sock` (the socket), `daemon.lock`
(held by the running daemon for its whole life, with its pid in it) and
`daemon.log`. The directory must be the user's own and closed to everyone
else (0700), the socket too (0600): anything else is refused, never repaired,
as another user could have prepared it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import stat
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import ChatAgentError
from ..locations import CONFIG_ENV, config_path, make_private_dirs

DIR_ENV = "CHATAGENT_DAEMON_DIR"
BUILD = f"chatagent {__version__} from {Path(__file__).resolve().parent.parent}"
# The variables the settings are read from (`settings.Settings`: CHATAGENT_*
# and the providers' own), and those that place the settings file.
SETTINGS_PREFIX = "CHATAGENT_"
PROVIDER_VARIABLES = frozenset(
    ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"))
CONFIG_VARIABLES = frozenset(("HOME", "XDG_CONFIG_HOME"))
# sun_path is 108 bytes on Linux and 104 on macOS, the terminating NUL included.
MAX_SOCKET_PATH = 103


class DaemonError(ChatAgentError):
    """The daemon cannot be used: its directory or socket is not private, it did not start or stop."""

    code = "daemon_error"


@dataclass(frozen=True)
class DaemonPaths:
    dir: Path

    @property
    def socket(self) -> Path:
        return self.dir / "daemon.sock"

    @property
    def staging(self) -> Path:
        """Where the socket is bound and narrowed before it is renamed into
        place (no longer a name than `socket`, so it fits where that does)."""
        return self.dir / "daemon.new"

    @property
    def lock(self) -> Path:
        return self.dir / "daemon.lock"

    @property
    def log(self) -> Path:
        return self.dir / "daemon.log"

    @classmethod
    def locate(cls, *, create: bool = True) -> "DaemonPaths":
        """The user's daemon directory, created if missing and `create` (0700,
        and so is each folder made for it: the settings folder its default
        `run/` is in, say); refused if it is not a directory of theirs closed
        to others. Commands that only look (`status`, `stop`) create nothing."""
        where = Path(os.path.abspath(os.environ.get(DIR_ENV) or _default_dir()))
        if create:
            make_private_dirs(where)
        try:
            check_private(where, directory=True)
        except FileNotFoundError:
            if create:
                raise
        paths = cls(where)
        if len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH:
            raise DaemonError(
                f"The daemon's socket path {paths.socket} is too long for a Unix socket: "
                f"set {DIR_ENV} to a shorter directory."
            )
        return paths


def settings_inputs(env: Mapping[str, str], cwd: str) -> str:
    """A digest of what in `env` the settings are read from, keys included.
    A daemon loads an ask's settings itself (its flags over these) when the
    ask's digest is the daemon's own: the same settings then load in both. Names
    are matched as the settings match them, in any case. Left out: where the
    daemon is (which is how the ask found it), and the settings file's path
    spelled relative to `cwd` (a daemon's is made absolute when it starts)."""
    picked = []
    for name, value in env.items():
        upper = name.upper()
        if upper == DIR_ENV or not (upper.startswith(SETTINGS_PREFIX) or upper in PROVIDER_VARIABLES | CONFIG_VARIABLES):
            continue
        if upper == CONFIG_ENV and value:
            value = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        picked.append(f"{name}={value}")
    return hashlib.sha256("\0".join(sorted(picked)).encode()).hexdigest()


def _default_dir() -> Path:
    if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
        # platformdirs would fall back to /tmp/runtime-UID, a name anyone can take first.
        return config_path().parent / "run"
    from platformdirs import user_runtime_path

    return user_runtime_path("chatagent", appauthor=False)


def check_private(path: Path, *, directory: bool) -> None:
    """Refuse `path` unless it is (not a link to) a directory or socket of
    this user's that no other user can open."""
    what = "directory" if directory else "socket"
    st = os.lstat(path)
    if not (stat.S_ISDIR if directory else stat.S_ISSOCK)(st.st_mode):
        raise DaemonError(f"The daemon's {what} {path} is not a {what}: remove it, or set {DIR_ENV} elsewhere.")
    if st.st_uid != os.getuid():
        raise DaemonError(
            f"The daemon's {what} {path} belongs to another user (uid {st.st_uid}), so chatagent will not use it: "
            f"set {DIR_ENV} to a directory of your own."
        )
    if st.st_mode & 0o077:
        fix = f"`chmod 700 {path}`" if directory else f"remove it (`rm {path}`)"
        raise DaemonError(
            f"The daemon's {what} {path} is open to other users (mode {stat.S_IMODE(st.st_mode):o}), "
            f"so chatagent will not use it: {fix}."
        )


def daemon_pid(paths: DaemonPaths) -> int | None:
    """The pid of the daemon holding the lock (0 while it has not written it
    yet); None when no daemon holds it."""
    try:
        fd = os.open(paths.lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            # Shared and let go at once: a daemon taking the lock retries meanwhile (`take_lock`).
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


LOCK_RETRIES = 20  # × 25 ms: `daemon_pid` holds the lock for microseconds at a time


def take_lock(paths: DaemonPaths) -> None:
    """Take the lock a daemon holds for its whole life: at most one daemon per
    directory, and a way to tell a live daemon from a stale socket. Nothing
    releases it but the process's end (the system does, for a killed daemon
    too), so `chatagent daemon stop` returns once the daemon is gone."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    for attempt in range(LOCK_RETRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == LOCK_RETRIES - 1:
                os.close(fd)
                pid = daemon_pid(paths)
                raise DaemonError(
                    f"A chatagent daemon is already running{f' (pid {pid})' if pid else ''}: "
                    "`chatagent daemon stop` stops it."
                ) from None
            time.sleep(0.025)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def peer(sock: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a Unix socket, where the
    system says (Linux: SO_PEERCRED); elsewhere the directory's mode is the only gate."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    size = struct.calcsize("3i")
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))
    return pid, uid
