"""The daemon's wire format: one JSON object per line, validated at both ends.

A connection carries one request. To an `ask` the daemon answers `refused`
(the client answers in its own process instead), `failed` (the ask could not
start: what `chatagent ask` reports as an error of its own), or `opened`
followed by the ask's events, exactly as `chatagent ask --json` prints them
(`chatagent.events`), ending with one `done` or `error`. Closing the
connection cancels the ask. `status` gets a `status`, `stop` a `stopping`.
An `ask` run as a command may first send an `open` (its command line): the
daemon answers `answering` and goes on as for an `ask`, or `ask_needed`.

Settings: an ask sends those the daemon can honour per question
(`PER_ASK`); every other setting an answer depends on (keys, endpoints, the
browser) is sent as a digest per setting, and the daemon refuses an ask
whose digests differ from its own rather than answer with its settings.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Literal, Union
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from ..limits import MIN_TAB_BUDGET
from .paths import BUILD, DaemonError

if TYPE_CHECKING:
    from ..settings import Settings

MAX_REQUEST_BYTES = 1 << 20
MAX_REPLY_BYTES = 64 << 20  # an event can carry a screenshot (base64 PNG)

# Settings the daemon takes from each ask.
PER_ASK = ("model", "budget", "timeout", "deadline", "input_budget")
# Settings an ask never uses: the answer cache (a one-off ask, like one in its
# own process, always asks the model), other front ends', the daemon's own.
NOT_FOR_ASK = ("cache", "mcp_token", "tool_timeout", "daemon", "daemon_idle")
# Targets the daemon takes: absolute URLs only. A path would be resolved
# against the daemon's directory, not the user's: the client resolves it.
ABSOLUTE_SCHEMES = ("http", "https", "file", "data", "about")


class ProtocolError(Exception):
    """A frame that is too long, cut off or not what the protocol allows."""


def shared_settings(settings: Settings) -> dict[str, str]:
    """A digest of each setting the daemon cannot take per ask: every one not
    in PER_ASK or NOT_FOR_ASK, so a setting added later must match too."""
    from ..settings import Settings  # not at import: a head start's `ask` never loads the settings machinery

    out = {}
    for key in Settings.model_fields:
        if key not in PER_ASK and key not in NOT_FOR_ASK:
            value = json.dumps(settings.secret(key), default=str)
            out[key] = hashlib.sha256(f"{key}\0{value}".encode()).hexdigest()[:32]
    return out


def refuse_cdp(settings: Settings) -> None:
    if settings.cdp:
        raise DaemonError(
            "The daemon launches a browser of its own; with the cdp setting, asks attach to your Chrome "
            "directly and need no daemon. `chatagent config unset cdp` (or unset CHATAGENT_CDP) to start one."
        )


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def encode(self) -> bytes:
        return self.model_dump_json().encode() + b"\n"


class AskRequest(_Frame):
    type: Literal["ask"] = "ask"
    build: str
    settings: dict[str, str]  # `shared_settings` of the client
    targets: list[str] = Field(min_length=1)
    question: str
    model: str
    budget: int = Field(ge=MIN_TAB_BUDGET)
    timeout: float = Field(gt=0)
    deadline: float = Field(gt=0)
    input_budget: float = Field(ge=1)

    @classmethod
    def of(cls, targets: list[str], question: str, settings: Settings, *, cwd: str | None = None) -> "AskRequest":
        """The ask `chatagent ask TARGETS -q QUESTION` makes with `settings`; its
        paths resolved against `cwd` (default: this process's directory), so
        only files the user named are read. Raises `TabError` for a target
        that is not there, ValueError for one only a browser of ours can judge."""
        from ..browser.targets import normalize_target

        return cls(
            build=BUILD, settings=shared_settings(settings), question=question, model=settings.model,
            targets=[normalize_target(t, cwd=cwd) for t in targets],
            budget=settings.budget, timeout=settings.timeout, deadline=settings.deadline,
            input_budget=settings.input_budget,
        )

    @field_validator("targets")
    @classmethod
    def _absolute(cls, targets: list[str]) -> list[str]:
        for target in targets:
            parts = urlsplit(target)
            if parts.scheme.lower() not in ABSOLUTE_SCHEMES or (parts.scheme.lower() == "file" and not parts.path.startswith("/")):
                raise ValueError(f"{target!r} is not an absolute URL")
        return targets


class OpenRequest(_Frame):
    """Sent by `ask` before anything else on its connection (`early`): its
    command line, so the daemon opens the pages at once. If the ask's build
    and settings inputs (`paths.settings_inputs`) are the daemon's, the daemon
    loads the settings from the command line itself and answers (`Answering`,
    then as to an `AskRequest`); otherwise it says `AskNeeded`, and the ask
    loads its settings and sends its `AskRequest` on the same connection."""

    type: Literal["open"] = "open"
    build: str
    inputs: str  # `paths.settings_inputs` of the ask's environment
    argv: list[str] = Field(max_length=1000)  # as `chatagent` was given it
    cwd: str  # where its relative paths are from

    @field_validator("cwd")
    @classmethod
    def _absolute_dir(cls, cwd: str) -> str:
        if not cwd.startswith("/"):
            raise ValueError(f"{cwd!r} is not an absolute path")
        return cwd


class StatusRequest(_Frame):
    type: Literal["status"] = "status"


class StopRequest(_Frame):
    type: Literal["stop"] = "stop"


class Refused(_Frame):
    type: Literal["refused"] = "refused"
    reason: str


class Failed(_Frame):
    type: Literal["failed"] = "failed"
    code: str
    message: str


class Answering(_Frame):
    """The daemon answers an `OpenRequest`'s ask as its command line says; how
    the ask shows it, from that command line too."""

    type: Literal["answering"] = "answering"
    json_mode: bool
    verbose: int = Field(ge=0)


class AskNeeded(_Frame):
    """The daemon cannot load this ask's settings itself: the ask sends its `AskRequest`."""

    type: Literal["ask_needed"] = "ask_needed"
    reason: str


class Opened(_Frame):
    type: Literal["opened"] = "opened"
    pid: int


class Status(_Frame):
    type: Literal["status"] = "status"
    pid: int
    build: str
    browser: str  # its name and version
    model: str  # the default model, warmed at start
    started_at: float  # seconds since the epoch
    asks: int  # asks answered or failed so far
    active: int  # asks in progress
    idle_s: float  # since the last ask ended (or the daemon started)
    idle_timeout_s: float
    socket: str
    log: str


class Stopping(_Frame):
    type: Literal["stopping"] = "stopping"
    pid: int


Request = Annotated[Union[AskRequest, OpenRequest, StatusRequest, StopRequest], Field(discriminator="type")]
Reply = Annotated[Union[Refused, Failed, Answering, AskNeeded, Opened, Status, Stopping], Field(discriminator="type")]
REQUEST: TypeAdapter[Request] = TypeAdapter(Request)
REPLY: TypeAdapter[Reply] = TypeAdapter(Reply)


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame, or None at the end of the stream. The reader's `limit`
    bounds a frame's size."""
    try:
        line = await reader.readline()
    except ValueError as exc:  # asyncio's word for a line over the limit
        raise ProtocolError(f"a frame over the size limit ({exc})") from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ProtocolError("a frame cut off by the end of the stream")
    return line


def parse_request(frame: bytes) -> Request:
    try:
        return REQUEST.validate_json(frame)
    except ValidationError as exc:
        raise ProtocolError(f"not a request: {_first_error(exc)}") from None


def parse_reply(frame: bytes) -> Reply:
    try:
        return REPLY.validate_json(frame)
    except ValidationError as exc:
        raise ProtocolError(f"not a reply: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0]
    return f"{'.'.join(map(str, e['loc'])) or 'frame'}: {e['msg']}"
