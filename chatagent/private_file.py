"""Writing a file that holds secrets (the settings file and its keys) so that
no other user of the machine can read it, keep it, or aim the write elsewhere.

The text goes to a temporary file of a random name in the same folder,
created exclusively and without following a link (a name planted there
beforehand, as a symbolic link or a hard link to a file of someone else's,
makes the open fail instead of writing through it), made 0600 on its
descriptor (a chmod by name would follow a link swapped in meanwhile), then
renamed over the file in one step. The folder is opened once and every name
is resolved in it, so the folder cannot be swapped mid-write either.

None of that holds in a folder another user can write (they may rename or
delete anything in it) or under one (they may swap the folder itself), or
for a file another user can write: `write_private` refuses those
(`NotPrivate`), saying which and why, before it writes anything.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress
from pathlib import Path

PRIVATE_MODE = stat.S_IRUSR | stat.S_IWUSR  # 0600


class NotPrivate(Exception):
    """A place where a private file cannot be kept private. `what` names it
    ("folder", "file"), `why` says who else can change it, in words for the user."""

    def __init__(self, path: Path, what: str, why: str) -> None:
        super().__init__(f"{what} {path} {why}")
        self.path, self.what, self.why = path, what, why


def _trusted(uid: int) -> bool:
    """Whether a file of `uid`'s is this user's to trust: their own, or root's."""
    return uid in (os.getuid(), 0)


def _check(path: Path, st: os.stat_result, what: str) -> None:
    """Refuse `path` (`NotPrivate`) if a user other than this one (or root) owns it or
    can write it. A folder anyone may write but only owners may rename in (the sticky
    bit: /tmp) is safe for a file of one's own."""
    if not _trusted(st.st_uid):
        raise NotPrivate(path, what, f"belongs to another user (uid {st.st_uid})")
    mode = stat.S_IMODE(st.st_mode)
    sticky = stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
        who = "other users" if mode & stat.S_IWOTH else "its group"
        raise NotPrivate(path, what, f"can be written by {who} (mode {mode:04o})")


def check_folder(folder: Path) -> None:
    """Refuse a folder (`NotPrivate`) where another user could replace what is written:
    the folder itself, or any folder above it, theirs or open to them."""
    real = folder.resolve()
    for place in (real, *real.parents):
        _check(place, os.stat(place), "folder")


def write_private(path: Path, text: str) -> None:
    """`text` in `path`, 0600, replaced in one step (see the module's docstring).
    `NotPrivate` if the folder or an existing file is not this user's alone;
    `OSError` if the write fails (the file is then as it was)."""
    folder = path.parent
    check_folder(folder)
    if os.name == "nt":  # no descriptors for folders, no links a user can plant in a profile folder
        _write_by_name(path, text)
        return
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _check(folder, os.fstat(dir_fd), "folder")  # the folder opened is the folder checked
        with suppress(FileNotFoundError):
            # A link the user made (a settings file kept elsewhere) is replaced by the file
            # itself; the file it pointed to (what was read) must be theirs alone as well.
            _check(path, os.stat(path.name, dir_fd=dir_fd), "file")
        name = f".{path.name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_MODE,
                     dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), PRIVATE_MODE)  # whatever the umask
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(name, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def _write_by_name(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), PRIVATE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
