"""Messages between the extension and the host (protocol version 1).

Wire names are camelCase (`tabId`, `callId`, `noCache`) because the other end
is JavaScript; Python attributes are snake_case. Validation is strict (no
`"5"` → 5 coercion: a wrong type is a bug in the extension worth reporting)
and unknown fields are ignored, so a newer extension can add fields without
breaking an older host. See PROTOCOL.md for the full description.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from chatagent.events import Event
from chatagent.limits import MAX_QUESTION_CHARS, MAX_SELECTION_CHARS

from .errors import BadToolResultError, MessageError

PROTOCOL_VERSION = 1

MAX_TABS = 20
MAX_HTML_BYTES = 8 * 1024 * 1024  # per tab, UTF-8 bytes
MAX_TEXT_CHARS = 4 * 1024 * 1024  # rendered text per tab / per tool result
MAX_ID_CHARS = 128
MAX_EARLIER_TURNS = 8  # of a thread the panel kept, sent again with each ask
MAX_EARLIER_ANSWER_CHARS = 8_000
MAX_PNG_BASE64_CHARS = 24 * 1024 * 1024
MAX_URL_CHARS = 64 * 1024
# Far above any real page (Chromium caps layout at 2**25 px), far below where
# int() or arithmetic on a browser's number could overflow.
MAX_PIXELS = 1_000_000_000

ToolName = Literal["screenshot", "scroll", "snapshot"]
ErrorCode = Literal[
    "bad_json",
    "unknown_type",
    "invalid_message",
    "too_large",
    "too_many_tabs",
    "bad_origin",
    "duplicate_id",
    "unknown_request",
    "too_many_requests",
    "internal",
    "closed",
]


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        strict=True,
        extra="ignore",
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


RequestId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


# ---------------------------------------------------------------- extension → host


class PingMessage(_Wire):
    type: Literal["ping"] = "ping"
    version: int | None = None  # the extension's PROTOCOL_VERSION, if it sends one


class AskTab(_Wire):
    tab_id: int = Field(ge=0)
    url: str = Field(max_length=MAX_URL_CHARS)
    title: str = Field(default="", max_length=MAX_URL_CHARS)
    # Empty html: the extension did not send it (too big for one ask frame, or
    # the page could not be scripted); the host fetches it with a `snapshot`.
    html: str = ""
    text: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)  # rendered innerText

    @field_validator("html")
    @classmethod
    def _html_size(cls, v: str) -> str:
        # Cheap check first: a str of n chars is at least n UTF-8 bytes.
        if len(v) > MAX_HTML_BYTES or len(v.encode("utf-8", "surrogatepass")) > MAX_HTML_BYTES:
            raise ValueError(f"html is over {MAX_HTML_BYTES} bytes; truncate it or omit it")
        return v


class AskSelection(_Wire):
    """Text the person selected in one of the ask's tabs, which the question is about."""

    tab_id: int = Field(ge=0)
    text: str = Field(min_length=1, max_length=MAX_SELECTION_CHARS)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("selection is blank")
        return v


class EarlierTurn(_Wire):
    """A question of the panel's thread and its answer, as the panel kept them: a thread that outlasted
    the host (a browser restart) goes on with its history."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    answer: str = Field(default="", max_length=MAX_EARLIER_ANSWER_CHARS)


class AskMessage(_Wire):
    type: Literal["ask"] = "ask"
    id: RequestId
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    tabs: list[AskTab] = Field(min_length=1, max_length=MAX_TABS)
    model: str | None = Field(default=None, max_length=200)
    no_cache: bool = False
    # The panel's thread: asks with the same id are follow-ups of each other.
    # None: the connection's one default conversation.
    conversation: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    selection: AskSelection | None = None
    # The thread's last turns: the host's history of `conversation` when it has none (it restarted).
    earlier: list[EarlierTurn] = Field(default_factory=list, max_length=MAX_EARLIER_TURNS)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("question is blank")
        return v

    @field_validator("tabs")
    @classmethod
    def _distinct_tabs(cls, v: list[AskTab]) -> list[AskTab]:
        ids = [t.tab_id for t in v]
        if len(set(ids)) != len(ids):
            raise ValueError("tabs has the same tabId twice")
        return v

    @model_validator(mode="after")
    def _selection_in_a_tab(self) -> AskMessage:
        if self.selection is not None and self.selection.tab_id not in {t.tab_id for t in self.tabs}:
            raise ValueError("selection.tabId is not one of the ask's tabs")
        return self


class CancelMessage(_Wire):
    type: Literal["cancel"] = "cancel"
    id: RequestId


# A position or size in CSS pixels, as a browser reports it: finite, not
# negative, bounded (JSON's 1e400 parses to infinity).
Pixels = Annotated[float, Field(ge=0, le=MAX_PIXELS, allow_inf_nan=False)]


class ScrollInfo(_Wire):
    scroll_y: Pixels
    page_height: Pixels
    viewport_height: Pixels
    at_bottom: bool


# What a successful result of each tool must carry (attribute and wire names coincide).
_TOOL_FIELDS: dict[str, tuple[str, ...]] = {
    "snapshot": ("html", "url"),
    "scroll": ("text", "scroll"),
    "screenshot": ("png",),
}


class ToolResultMessage(_Wire):
    type: Literal["tool_result"] = "tool_result"
    id: RequestId
    call_id: RequestId
    ok: bool
    png: str | None = Field(default=None, max_length=MAX_PNG_BASE64_CHARS)  # base64 PNG, no data: prefix needed
    html: str | None = None
    text: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    url: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    title: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    scroll: ScrollInfo | None = None
    error: str | None = Field(default=None, max_length=10_000)

    @field_validator("png")
    @classmethod
    def _base64(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("data:"):  # captureVisibleTab hands out data URLs; accept them
            _, _, v = v.partition(",")
        try:
            base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("png is not valid base64") from None
        return v

    @field_validator("html")
    @classmethod
    def _html_size(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > MAX_HTML_BYTES or len(v.encode("utf-8", "surrogatepass")) > MAX_HTML_BYTES):
            raise ValueError(f"html is over {MAX_HTML_BYTES} bytes; truncate it")
        return v

    def png_bytes(self) -> bytes:
        return bytes(base64.b64decode(self.png or ""))

    def missing_for(self, name: ToolName) -> list[str]:
        """Wire names of the fields a successful `name` result needs but lacks."""
        return [field for field in _TOOL_FIELDS[name] if getattr(self, field) is None]


# The settings the panel may read and change: the model, how to reach it, and
# its window. Nothing that points the host at another browser, file or listener.
PANEL_SETTINGS = ("model", "google_api_key", "gemini_base_url", "openai_base_url", "openai_api_key", "context_window")
SettingValue = Annotated[str, Field(max_length=2000)]


class PanelSettingValues(_Wire):
    """Values to save; a field sent as null is removed from the settings file
    (back to its default); a field not sent is left as it is."""

    model: SettingValue | None = None
    google_api_key: SettingValue | None = None
    gemini_base_url: SettingValue | None = None
    openai_base_url: SettingValue | None = None
    openai_api_key: SettingValue | None = None
    context_window: SettingValue | None = None  # tokens, as text ("8192"); null: asked of the model's server


class SettingsGetMessage(_Wire):
    type: Literal["settings_get"] = "settings_get"
    id: RequestId


class SettingsSetMessage(_Wire):
    type: Literal["settings_set"] = "settings_set"
    id: RequestId
    values: PanelSettingValues


class ModelCheckMessage(_Wire):
    """Test the connection to `provider`'s server with the Settings form as
    typed (`values`, not saved, over the saved settings): is it there, what
    does it serve, and does it serve `values.model` (when sent)? Answered by
    `model_checked`."""

    type: Literal["model_check"] = "model_check"
    id: RequestId
    provider: Literal["gemini", "openai"]  # the panel's choices that have a server
    values: PanelSettingValues = Field(default_factory=PanelSettingValues)


IncomingMessage = Annotated[
    Union[PingMessage, AskMessage, CancelMessage, ToolResultMessage, SettingsGetMessage, SettingsSetMessage,
          ModelCheckMessage],
    Field(discriminator="type"),
]
INCOMING_ADAPTER: TypeAdapter[IncomingMessage] = TypeAdapter(IncomingMessage)
INCOMING_TYPES = ("ping", "ask", "cancel", "tool_result", "settings_get", "settings_set", "model_check")


# ---------------------------------------------------------------- host → extension


class PongMessage(_Wire):
    type: Literal["pong"] = "pong"
    version: int = PROTOCOL_VERSION


class TabLabel(_Wire):
    tab_id: int
    label: str  # "2": the answer calls this tab [Tab 2]


class EventMessage(_Wire):
    """One agent event for request `id`. `event` is the event's own JSON
    (see chatagent/events.py); a `done` or `error` event ends the request.
    An ask's first event also carries `tabs`: how its answer names its tabs."""

    type: Literal["event"] = "event"
    id: str
    event: dict[str, Any]
    tabs: list[TabLabel] | None = None

    @classmethod
    def wrap(cls, request_id: str, event: Event | dict[str, Any]) -> EventMessage:
        data = event if isinstance(event, dict) else event.model_dump(mode="json", by_alias=True, exclude_none=True)
        return cls(id=request_id, event=data)


class ToolRequestMessage(_Wire):
    type: Literal["tool_request"] = "tool_request"
    id: str
    call_id: str
    name: ToolName
    args: dict[str, Any] = Field(default_factory=dict)
    tab_id: int


class ErrorMessage(_Wire):
    """A problem with a frame or a request. `id` is the request it concerns,
    or null when it concerns no request (unparseable frame, bad origin)."""

    type: Literal["error"] = "error"
    id: str | None = None
    code: str
    message: str

    def to_wire(self) -> dict[str, Any]:
        # `id` is always present (null when none), so the extension need not guess.
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_exception(cls, exc: BaseException, request_id: str | None = None) -> ErrorMessage:
        code = getattr(exc, "code", "internal")
        rid = getattr(exc, "request_id", None) or request_id
        return cls(id=rid, code=code, message=getattr(exc, "message", None) or str(exc) or type(exc).__name__)


class ShownSetting(_Wire):
    value: str | None  # keys masked ("…y987"); null: not set (or, for a key, none for the endpoint in effect)
    source: Literal["flag", "env", "file", "default"]
    origin: str  # in words: "environment GOOGLE_API_KEY", "file /home/…/config.toml", "default"
    # A key saved for another endpoint than the one in effect: that endpoint (the key is not used).
    saved_for: str | None = None


class ModelForm(_Wire):
    """How the panel's Settings form shows the model that answers: the group
    it is chosen in, its name as that group's field takes it, and the server
    it is reached at where the model's name alone says so (`ollama:llama3.2`:
    Ollama's address); saved from the form, it stays the same model there."""

    provider: Literal["extractive", "gemini", "openai"]
    model: str
    base_url: str | None = None  # null: the Server URL setting


class SettingsMessage(_Wire):
    """The answer to `settings_get` and `settings_set`: the panel's settings
    as they now stand, the model that answers, and where the file is."""

    type: Literal["settings"] = "settings"
    id: str
    model: str  # the model that answers, as users name it
    form: ModelForm
    settings: dict[str, ShownSetting]  # by camelCase name (googleApiKey, …)
    path: str
    # Why the model that answers cannot answer yet (a missing key), in words; None: it can.
    problem: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)  # a null value means "not set": keep it


class ModelCheckedMessage(_Wire):
    """The answer to `model_check`: the models the server of `model`'s
    provider lists (as the panel's model field takes them), and what is wrong,
    in the panel's words (None: it serves `model`). Names are the server's
    words: the panel shows them as text."""

    type: Literal["model_checked"] = "model_checked"
    id: str
    model: str | None  # the model tested, as users name it; null: the server's list only
    endpoint: str  # where it asked
    models: list[str]
    problem: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)  # `problem: null` says it is served


OutgoingMessage = Annotated[
    Union[PongMessage, EventMessage, ToolRequestMessage, ErrorMessage, SettingsMessage, ModelCheckedMessage],
    Field(discriminator="type"),
]
OUTGOING_ADAPTER: TypeAdapter[OutgoingMessage] = TypeAdapter(OutgoingMessage)


# ---------------------------------------------------------------- parsing


def _describe(err: ErrorDetails) -> str:
    parts = err["loc"][1:]  # loc[0] is the union tag (the message type): noise
    loc = ".".join(str(p) for p in parts) or "message"
    return f"{loc}: {err['msg']}"


_BULKY_FIELDS = {"question", "html", "text", "png", "url", "title", "error"}  # `text` is a selection's too


def _classify(errors: list[ErrorDetails]) -> str:
    for err in errors:
        loc = err["loc"]
        if len(loc) >= 2 and loc[1] == "tabs" and err["type"] == "too_long":
            return "too_many_tabs"
    for err in errors:
        field = err["loc"][-1] if err["loc"] else ""
        if field in _BULKY_FIELDS and (err["type"] == "string_too_long" or "bytes" in err["msg"]):
            return "too_large"
    return "invalid_message"


def parse_message(data: Any) -> IncomingMessage:
    """A decoded JSON value → a typed incoming message, or `MessageError` with
    a code (`unknown_type`, `invalid_message`, `too_large`, `too_many_tabs`),
    the request id when one could be read, and a message naming every bad field.
    An invalid `tool_result` that names its call raises `BadToolResultError`."""
    if not isinstance(data, dict):
        raise MessageError("invalid_message", f"A message must be a JSON object, not {type(data).__name__}.")
    rid = data.get("id") if isinstance(data.get("id"), str) else None
    kind = data.get("type")
    if kind not in INCOMING_TYPES:
        shown = repr(kind) if kind is not None else "missing"
        raise MessageError(
            "unknown_type",
            f"Unknown message type {shown}; expected one of {', '.join(INCOMING_TYPES)} "
            f"(protocol version {PROTOCOL_VERSION}).",
            rid,
        )
    try:
        return INCOMING_ADAPTER.validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        detail = "; ".join(_describe(e) for e in errors[:8])
        if len(errors) > 8:
            detail += f"; and {len(errors) - 8} more"
        code = _classify(errors)
        if code == "too_many_tabs":
            detail = f"an ask may name at most {MAX_TABS} tabs (got {len(data.get('tabs') or [])})"
        message = f"Invalid {kind!r} message: {detail}."
        call_id = data.get("callId")
        if kind == "tool_result" and rid is not None and isinstance(call_id, str):
            raise BadToolResultError(code, message, rid, call_id, detail) from None
        raise MessageError(code, message, rid) from None


def try_parse_message(data: Any) -> IncomingMessage | MessageError:
    """`parse_message` that returns the error instead of raising it."""
    try:
        return parse_message(data)
    except MessageError as exc:
        return exc


def parse_outgoing(data: Any) -> OutgoingMessage:
    """Host → extension frames, validated (for tests and Python clients)."""
    return OUTGOING_ADAPTER.validate_python(data)
