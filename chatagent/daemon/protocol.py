"""The daemon's wire format: one JSON object per line, validated at both ends.

A connection carries one request. An ask is one `AskRequest`: its targets and
question as typed, the settings its flags set, its directory and a digest of
what its settings are read from (`paths.settings_inputs`). `chatagent ask`
sends it before it loads the CLI or the settings (`early`), so the daemon
opens the pages at once. The daemon answers:

- `answering`, when that digest is its own: it loads the ask's settings
  itself (its flags over the same environment and settings file);
- `settings_needed`, when it cannot: the ask loads its settings and sends
  them (`AskSettings`: those the daemon takes per ask, `PER_ASK`, and a
  digest of every other one, `shared_settings`); the daemon answers
  `refused` if those digests are not its own, rather than answer with its
  settings (the client then answers in its own process);
- `refused` to a request it cannot read, or from another build.

Then `failed` (the ask could not start: what `chatagent ask` reports as an
error of its own), or `opened` followed by the ask's events, exactly as
`chatagent ask --json` prints them (`chatagent.events`), ending with one
`done` or `error`. Closing the connection cancels the ask. `status` gets a
`status`, `stop` a `stopping`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from ..ask_args import ASK_FLAGS
from ..limits import MIN_CONTEXT_WINDOW, MIN_TAB_BUDGET
from .paths import DaemonError

if TYPE_CHECKING:
    from ..settings import Settings

MAX_REQUEST_BYTES = 1 << 20
MAX_REPLY_BYTES = 64 << 20  # an event can carry a screenshot (base64 PNG)

# Settings the daemon takes from each ask: those its command line can set, but
# `context_window`: its models' windows are found once, for its own settings, so
# it is compared as the other settings are (`shared_settings`), and an ask that
# gives another is answered in its own process.
PER_ASK = tuple(key for key in ASK_FLAGS if key != "context_window")
# Settings an ask never uses: the answer cache (a one-off ask, like one in its
# own process, always asks the model), other front ends', the daemon's own.
NOT_FOR_ASK = ("cache", "mcp_token", "tool_timeout", "daemon", "daemon_idle")


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


class AskFlags(_Frame):
    """The settings an ask's command line sets (`ask_args.ASK_FLAGS`); None: not set."""

    model: str | None = None
    budget: int | None = Field(default=None, ge=MIN_TAB_BUDGET)
    timeout: float | None = Field(default=None, gt=0)
    deadline: float | None = Field(default=None, gt=0)
    input_budget: float | None = Field(default=None, ge=1)
    context_window: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)


class AskRequest(_Frame):
    """`chatagent ask TARGETS -q QUESTION [flags]`, sent by the head start
    (`early.ask_request`, which writes it as plain JSON) or by the CLI."""

    type: Literal["ask"] = "ask"
    build: str
    inputs: str  # `paths.settings_inputs` of the ask's environment
    cwd: str  # the ask's directory: its relative paths name files there, never in the daemon's
    targets: list[str] = Field(min_length=1, max_length=1000)  # as typed, "~" expanded; paths from `cwd`
    question: str
    flags: AskFlags

    @field_validator("cwd")
    @classmethod
    def _absolute_dir(cls, cwd: str) -> str:
        if not cwd.startswith("/"):
            raise ValueError(f"{cwd!r} is not an absolute path")
        return cwd

    @field_validator("question")
    @classmethod
    def _asked(cls, question: str) -> str:
        if not question.strip():  # `chatagent ask` refuses one itself
            raise ValueError("the question is empty")
        return question


class AskSettings(_Frame):
    """An ask's settings, sent by the ask after `settings_needed`; the daemon
    makes the same from the settings it loads for an ask it is `answering`."""

    type: Literal["settings"] = "settings"
    settings: dict[str, str]  # `shared_settings`
    model: str
    budget: int = Field(ge=MIN_TAB_BUDGET)
    timeout: float = Field(gt=0)
    deadline: float = Field(gt=0)
    input_budget: float = Field(ge=1)

    @classmethod
    def of(cls, settings: Settings) -> "AskSettings":
        return cls(settings=shared_settings(settings), **{key: getattr(settings, key) for key in PER_ASK})


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
    """The daemon loaded the ask's settings itself: `opened` or `failed` follows."""

    type: Literal["answering"] = "answering"


class SettingsNeeded(_Frame):
    """The daemon cannot load this ask's settings itself (why: `reason`): the
    ask sends its `AskSettings`, or closes the connection and answers itself."""

    type: Literal["settings_needed"] = "settings_needed"
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


Request = Annotated[Union[AskRequest, AskSettings, StatusRequest, StopRequest], Field(discriminator="type")]
Reply = Annotated[Union[Refused, Failed, Answering, SettingsNeeded, Opened, Status, Stopping], Field(discriminator="type")]
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
