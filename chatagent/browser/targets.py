"""Turn what a user typed (URL, file:// URL or local path) into a URL to open."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from ..errors import TabError

_SCHEMES = ("http", "https", "file", "data", "about")
# Endings that name a file, never a top-level domain: "notes.html" is a missing
# file, not https://notes.html.
_FILE_EXTS = frozenset(
    "html htm xhtml shtml mhtml txt md markdown pdf json xml csv tsv svg png jpg jpeg gif webp".split()
)


def normalize_target(target: str, cwd: str | None = None) -> str:
    """`cwd`: the directory a relative path is taken from (default: this process's)."""
    target = target.strip()
    if not target:
        raise TabError("Empty URL.")
    parsed = urlparse(target)
    if parsed.scheme in ("http", "https") and not parsed.hostname:
        raise TabError(f"{target!r} is not a valid URL: it names no host.")
    if parsed.scheme in _SCHEMES:
        return target
    if parsed.scheme and len(parsed.scheme) > 1 and "://" in target:
        raise TabError(f"Unsupported URL scheme {parsed.scheme!r} in {target!r}: use http(s), file or a local path.")
    path = Path(target).expanduser()
    if cwd is not None:
        path = Path(cwd) / path  # an absolute `path` stays as it is
    if path.exists():
        if path.is_dir():
            raise TabError(f"{target!r} is a directory, not a page.")
        return path.resolve().as_uri()
    host = target.split("/")[0]
    ext = host.rsplit(".", 1)[-1].lower() if "." in host else ""
    names_a_file = ext in _FILE_EXTS or ("." not in host and path.suffix.lstrip(".").lower() in _FILE_EXTS)
    if target.startswith(("/", ".", "~")) or names_a_file:
        raise TabError(f"No such file: {target!r}.")
    if "." in host and " " not in target:
        return "https://" + target  # "example.com/page" as a browser would take it
    raise TabError(f"{target!r} is neither a URL nor an existing file.")
