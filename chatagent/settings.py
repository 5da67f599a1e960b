"""Settings: every default and every environment variable, in one typed object.

Read from, highest first: flags (passed in as keyword arguments), the
environment, the settings file (`config.toml` in the platform's config
directory: `$XDG_CONFIG_HOME/chatagent/config.toml` on Linux), then the
defaults below. `chatagent config show|set|unset|path` read and write it.

The model is what the settings say, never what happens to be in the
environment: a key there is used by the provider that needs it, and does not
by itself pick a provider. Debian's and Ubuntu's Chromium launcher exports
Chromium's own GOOGLE_API_KEY into everything the browser starts (the side
panel's host included); that key is recognised and ignored.

A key goes only to the endpoint it was given for (`KEY_ENDPOINTS`): one in the
environment to the environment's endpoint, else the provider's default; one in
the file to the endpoint the file records with it (`set_values` writes it),
else the default (a key saved before keys were bound). So an endpoint changed
by an untrusted hand (the side panel's extension) gets no key it was not given
with; endpoints themselves are https, or http on this machine only
(`check_endpoint`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .errors import ChatAgentError, ModelConfigError, UsageError
from .limits import (
    DEFAULT_DEADLINE_S,
    DEFAULT_EXTRACT_MEMORY_MB,
    DEFAULT_EXTRACT_TIMEOUT_S,
    DEFAULT_LOAD_TIMEOUT_S,
    DEFAULT_MAX_ANSWER_TOKENS,
    DEFAULT_MAX_PAGE_CHARS,
    DEFAULT_MAX_TABS_MB,
    DEFAULT_MAX_RESPONSE_MB,
    DEFAULT_MODEL,
    DEFAULT_OFFLINE_TIMEOUT_S,
    DEFAULT_TAB_BUDGET,
    DEFAULT_TOOL_TIMEOUT_S,
    INPUT_BUDGET_FACTOR,
    MIN_ANSWER_TOKENS,
    MIN_CONTEXT_WINDOW,
    MIN_INPUT_BUDGET,
    MIN_TAB_BUDGET,
)
from .locations import config_dir, config_path, make_private_dirs, tighten_dir
from .scrub import tail

# Files in which a browser's launcher exports its own Google API key (Debian, Ubuntu).
BROWSER_KEY_FILES = (Path("/etc/chromium.d/apikeys"), Path("/etc/chromium-browser/apikeys"))

GOOGLE_ENDPOINT = "https://generativelanguage.googleapis.com"
# Each provider's key, and the endpoint setting its requests (and so the key) go to.
KEY_ENDPOINTS = {"google_api_key": "gemini_base_url", "openai_api_key": "openai_base_url"}
LOOPBACK_NAMES = "localhost, 127.0.0.1, ::1"


class ConfigError(ChatAgentError):
    """A setting has a value that cannot be used, or the settings file cannot be read or written."""

    code = "config_error"


class BadValueError(ConfigError):
    """A value the setting cannot take, refused before it is written
    (`check_value`). `reason`: why, without the setting's name, for a front
    end that names the setting its own way (the side panel)."""


class BadSettingError(ConfigError, UsageError):
    """A setting has a value it cannot take, whichever gave it (a flag, a
    variable, the settings file): the command cannot run as configured, and
    exits 2 as for a usage error, as `--budget 10` or `--model NAME` would.
    A settings file that cannot be read at all stays a `ConfigError` (1)."""


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """What a user can set. Keys are the names used by `chatagent config set`
    and in the settings file; each also reads CHATAGENT_<KEY>, and some the
    provider's usual variable too."""

    model_config = SettingsConfigDict(
        env_prefix="CHATAGENT_", env_ignore_empty=True, validate_by_name=True, validate_by_alias=True, extra="ignore",
        validate_default=True,
    )

    model: str = Field(DEFAULT_MODEL, description="the model that answers: extractive (offline), "
                       "gemini-2.5-flash, openai:MODEL, ollama:MODEL, lmstudio:MODEL, llamacpp:MODEL")
    google_api_key: SecretStr | None = Field(
        None, validation_alias=_env("GOOGLE_API_KEY", "GEMINI_API_KEY", "CHATAGENT_GOOGLE_API_KEY"),
        description="Gemini API key")
    gemini_base_url: str | None = Field(
        None, validation_alias=_env("GOOGLE_GEMINI_BASE_URL", "CHATAGENT_GEMINI_BASE_URL"),
        description="Gemini API endpoint (default: Google's): https, or http on this machine")
    openai_base_url: str = Field(
        "http://127.0.0.1:11434/v1", validation_alias=_env("CHATAGENT_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        description="OpenAI-compatible server for openai:MODEL (default: Ollama's): https, or http on this machine")
    openai_api_key: SecretStr | None = Field(
        None, validation_alias=_env("OPENAI_API_KEY", "CHATAGENT_OPENAI_API_KEY"),
        description="key for the OpenAI-compatible server, if it needs one")
    budget: int = Field(DEFAULT_TAB_BUDGET, ge=MIN_TAB_BUDGET, description="tokens of page text per tab")
    timeout: float = Field(DEFAULT_LOAD_TIMEOUT_S, gt=0, description="seconds to wait for each page to load")
    deadline: float = Field(DEFAULT_DEADLINE_S, gt=0, description="seconds after which a question is given up")
    max_response_mb: float = Field(DEFAULT_MAX_RESPONSE_MB, gt=0, description="a page, or a file it loads, larger than this many "
                                   "MB is not loaded (the tab says so)")
    extract_timeout_s: float = Field(DEFAULT_EXTRACT_TIMEOUT_S, gt=0, description="a page taking longer than "
                                     "this many seconds to read is given up (its visible text is used)")
    extract_memory_mb: float = Field(DEFAULT_EXTRACT_MEMORY_MB, ge=256, description="a page needing more than this "
                                     "many MB to read is given up (its visible text is used)")
    offline_timeout: float = Field(DEFAULT_OFFLINE_TIMEOUT_S, gt=0, description="seconds the offline model reads "
                                   "for one answer: the parts of a question it has not reached by then are named, "
                                   "not answered")
    max_page_chars: int = Field(DEFAULT_MAX_PAGE_CHARS, ge=1000, description="characters of a tab's text (and of "
                                "its HTML) read from the browser; the rest is left out (the tab says so)")
    max_tabs: int = Field(20, ge=1, description="`chatagent mcp` and the daemon: tabs open at once across "
                          "calls; a call beyond waits its turn")
    max_tabs_mb: float = Field(DEFAULT_MAX_TABS_MB, gt=0, description="memory (MB) the pages of a launched browser "
                               "may hold across open tabs; a page beyond waits, then is refused (the tab says so)")
    max_answer_tokens: int = Field(DEFAULT_MAX_ANSWER_TOKENS, ge=MIN_ANSWER_TOKENS, description="an answer is cut "
                                   "at this many tokens (it says so)")
    context_window: int | None = Field(None, ge=MIN_CONTEXT_WINDOW, description="tokens the model reads at once, "
                                       "prompt and answer together (default: asked of its server, else its "
                                       "provider's default: `chatagent models --check`)")
    input_budget: float = Field(INPUT_BUDGET_FACTOR, ge=1, description="a question's input tokens, all model calls "
                                f"together, stay within this many times its first request (never below {MIN_INPUT_BUDGET:,})")
    cache: bool = Field(True, description="answer a repeated question about unchanged pages from memory "
                        "(chat and the side panel)")
    cdp: str | None = Field(None, description="attach to this Chrome (--remote-debugging-port) instead of "
                            "launching one, e.g. http://127.0.0.1:9222")
    browser_ws: str | None = Field(None, description="use a browser from this Playwright browser server "
                                   "(playwright launch-server), e.g. ws://127.0.0.1:3000/")
    browser: str | None = Field(None, description="the Chrome/Chromium executable to launch (default: found)")
    mcp_token: SecretStr | None = Field(None, description="`chatagent mcp --http`: the bearer token clients "
                                        "must send (made and saved by the first server on 127.0.0.1; set it first for another host)")
    tool_timeout: float = Field(DEFAULT_TOOL_TIMEOUT_S, gt=0, description="side panel: seconds to wait for the extension "
                                "to run one browser tool")
    daemon: bool = Field(False, description="`chatagent ask` starts a background daemon on first use and "
                         "is answered by it, warm, from then on (`chatagent daemon`)")
    daemon_idle: float = Field(900.0, gt=0, description="seconds a daemon stays up without a question")

    # Every key the environment and the file gave: the one in use first, then
    # the others, environment before file (`_bind_keys`).
    _saved: dict[str, tuple[SavedKey, ...]] = PrivateAttr(default_factory=dict)

    @field_validator("gemini_base_url", "openai_base_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else check_endpoint(value)

    @model_validator(mode="wrap")
    @classmethod
    def _bind_keys(cls, data: Any, handler: ModelWrapValidatorHandler["Settings"]) -> "Settings":
        """Each provider key the environment or the file gave (`SavedKey`s, by
        source: see `_Environment` and `_File`) becomes the first one given
        for the endpoint in effect, or None when none is. A key given directly
        (a flag, or code constructing `Settings`) is the caller's own: used as given."""
        saved: dict[str, tuple[SavedKey, ...]] = {}
        if isinstance(data, dict):
            data = dict(data)
            for key, setting in KEY_ENDPOINTS.items():
                for name in _names(key):
                    given = data.get(name)
                    if not (isinstance(given, dict) and given and all(isinstance(v, SavedKey) for v in given.values())):
                        continue
                    found = tuple(given[source] for source in ("env", "file") if source in given)
                    endpoint = next((data[n] for n in _names(setting) if data.get(n) is not None), None)
                    in_effect = str(endpoint) if endpoint is not None else default_endpoint(setting)
                    usable = next((k for k in found if same_endpoint(k.endpoint, in_effect)), None)
                    data[name] = usable.secret if usable else None
                    saved[key] = (usable, *(k for k in found if k is not usable)) if usable else found
        settings = handler(data)
        settings._saved = saved
        return settings

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _Environment(settings_cls), _file_source(settings_cls)

    @classmethod
    def load(cls, **flags: Any) -> "Settings":
        """Flags (None: not given) over the environment, the file and the defaults."""
        given = {k: v for k, v in flags.items() if v is not None}
        unknown = sorted(set(given) - set(cls.model_fields))
        if unknown:
            raise ConfigError(f"Unknown setting {', '.join(unknown)}. Settings: {', '.join(cls.model_fields)}.")
        try:
            return cls(**given)
        except ValidationError as exc:
            raise BadSettingError(_explain(exc, given)) from None

    def secret(self, key: str) -> str | None:
        value = getattr(self, key)
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    def endpoint(self, setting: str) -> str:
        """Where an endpoint setting (`gemini_base_url`, `openai_base_url`) points, its default spelled out."""
        return getattr(self, setting) or default_endpoint(setting)

    def saved_key(self, key: str) -> SavedKey | None:
        """Where a provider key came from when the environment or the file gave
        it: the one in use, else the first given (environment before file),
        which then is for another endpoint. None: given directly, or not at all."""
        return next(iter(self._saved.get(key, ())), None)

    def key_elsewhere(self, key: str) -> SavedKey | None:
        """The saved key a provider goes without because it was given for
        another endpoint than the one in effect; None when a key is in use or none is saved."""
        return None if getattr(self, key) is not None else self.saved_key(key)

    def saved_secrets(self) -> list[SecretStr]:
        """Every key the environment and the settings file hold, used or not
        (a key for another endpoint is no field's value, but still a secret)."""
        return [k.secret for found in self._saved.values() for k in found]


    def secret_values(self) -> list[str]:
        """Every secret these settings hold: each `SecretStr` setting that is
        set, a setting added later included, and every saved key, used or not
        (`saved_secrets`). What `scrub` masks in whatever chatagent writes; a
        secret kept anywhere else belongs here too."""
        fields = [value for key in type(self).model_fields if isinstance(value := getattr(self, key), SecretStr)]
        return [secret.get_secret_value() for secret in [*fields, *self.saved_secrets()]]

@dataclass(frozen=True)
class SavedKey:
    """A provider's key as the environment or the settings file holds it, with
    the endpoint it was given for: the only one it is sent to."""

    secret: SecretStr
    endpoint: str
    source: Literal["env", "file"]

    def describe(self) -> str:
        return "the key in the environment" if self.source == "env" else "the key in the settings file"


# --- endpoints --------------------------------------------------------------------


def default_endpoint(setting: str) -> str:
    """Where an endpoint setting points when nothing sets it."""
    default = Settings.model_fields[setting].default
    return str(default) if default else GOOGLE_ENDPOINT


def check_endpoint(url: str) -> str:
    """`url`, if requests with a key and page text may go there: an https URL,
    or http to this machine (loopback: nothing on the way can read it). Else a
    validation error saying why, for the caller to name the setting."""
    url = url.strip()
    if not url.isprintable() or any(c.isspace() or c == "\\" for c in url):
        raise PydanticCustomError("endpoint", "a URL has no spaces, control characters or backslashes")
    parts = urlsplit(url)
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        host = None
    need = f"an https:// URL, or http:// on this machine ({LOOPBACK_NAMES})"
    if parts.scheme not in ("https", "http"):
        scheme = f"{parts.scheme}:" if parts.scheme else "a URL without a scheme"
        raise PydanticCustomError("endpoint", "must be {need}, not {scheme}", {"need": need, "scheme": scheme})
    if not host:
        raise PydanticCustomError("endpoint", "must be {need} with a host, e.g. https://example.com", {"need": need})
    if "@" in parts.netloc:
        raise PydanticCustomError("endpoint", "must not carry a user name or password (…@)")
    if parts.scheme == "http" and not _loopback(host):
        raise PydanticCustomError(
            "endpoint", "http:// is allowed on this machine only ({loopback}): {host} needs https://",
            {"loopback": LOOPBACK_NAMES, "host": host})
    return url


def on_this_machine(url: str) -> bool:
    """Whether `url` names a server on this machine (loopback)."""
    return _loopback(urlsplit(url).hostname or "")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_endpoint(a: str, b: str) -> bool:
    """Whether two endpoint URLs name the same server and path (case, a
    default port and a trailing slash aside)."""
    return _endpoint_id(a) == _endpoint_id(b)


def _endpoint_id(url: str) -> tuple[Any, ...]:
    parts = urlsplit(url.strip())
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return (url,)
    return (parts.scheme, parts.hostname or "", port, parts.path.rstrip("/"), parts.query)


# --- where settings come from -----------------------------------------------------


def _file_source(settings_cls: type[BaseSettings]) -> PydanticBaseSettingsSource:
    path = config_path()
    try:
        return _File(settings_cls, toml_file=path)
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(
            f"The settings file {path} cannot be read ({exc}). Fix it, or remove it to start again."
        ) from None


def browser_launcher_keys() -> frozenset[str]:
    """API keys a browser's launcher exports for the browser itself (Debian's
    Chromium: /etc/chromium.d/apikeys). They are Chromium's, not the user's."""
    keys: set[str] = set()
    for path in BROWSER_KEY_FILES:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        keys.update(m[1] for m in re.finditer(r'^\s*(?:export\s+)?GOOGLE_API_KEY=["\']?([^"\'\s]+)', text, re.M))
    return frozenset(keys)


class _Environment(EnvSettingsSource):
    """The environment, minus a GOOGLE_API_KEY that is the browser launcher's
    own. A key is for the endpoint the environment names, else the provider's
    default: the user's own either way."""

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        foreign = browser_launcher_keys()
        for key in [k for k, v in data.items() if _field_of(k) == "google_api_key" and v in foreign]:
            del data[key]
        return _saved_keys(data, "env", lambda setting: _value_of(data, setting))


class _File(TomlConfigSettingsSource):
    """The settings file. A key is for the endpoint recorded beside it
    (`KEY_ENDPOINT`), else (saved before keys were bound) the provider's default."""

    def __call__(self) -> dict[str, Any]:
        return _saved_keys(super().__call__(), "file", lambda setting: _bound_endpoint(self.toml_data, setting))


# The file's record of the endpoint a saved key is for: `google_api_key_endpoint = "https://…"`.
KEY_ENDPOINT = "{key}_endpoint"


def _bound_endpoint(doc: Mapping[str, Any], setting: str) -> str | None:
    key = next(k for k, s in KEY_ENDPOINTS.items() if s == setting)
    value = doc.get(KEY_ENDPOINT.format(key=key))
    return str(value) if isinstance(value, str) else None


def _saved_keys(data: dict[str, Any], source: Literal["env", "file"], endpoint_for: Any) -> dict[str, Any]:
    """`data` with each provider key as `{source: SavedKey}`: the sources' dicts
    are merged key by key, so `Settings._bind_keys` sees every source's key,
    not just the first, and can choose the one for the endpoint in effect."""
    for name, value in list(data.items()):
        key = _field_of(name)
        if key in KEY_ENDPOINTS and isinstance(value, str):
            setting = KEY_ENDPOINTS[key]
            endpoint = endpoint_for(setting) or default_endpoint(setting)
            data[name] = {source: SavedKey(SecretStr(value), str(endpoint), source)}
    return data


def _value_of(data: Mapping[str, Any], key: str) -> Any:
    """The value `data` (a source's, or the file's) gives `key` under any of its names; None: none."""
    return next((v for n, v in data.items() if _field_of(n) == key), None)


def _names(key: str) -> list[str]:
    """The names a setting's value may go by in a source's data: its variables, then its own."""
    return [*_variables(Settings.model_fields[key]), key]


def _field_of(name: str) -> str | None:
    """The setting a source's key (field name or one of its variables) stands for."""
    lowered = name.lower()
    for key, info in Settings.model_fields.items():
        if lowered in (key, f"chatagent_{key}") or lowered in (n.lower() for n in _variables(info)):
            return key
    return None


def _variables(info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(c) for c in alias.choices]
    return []


def _explain(exc: ValidationError, flags: dict[str, Any]) -> str:
    found = _Found.read()
    problems = []
    for e in exc.errors():
        key = _field_of(str(e["loc"][0])) if e["loc"] else None
        where = "" if key is None else f" ({_origin(key, flags, found).describe()})"
        problems.append(f"{key or e['loc']}{where}: {e['msg']}")
    return "Bad setting: " + "; ".join(problems) + ". Fix it with `chatagent config set KEY VALUE`, the flag or the variable."


def check_model(settings: Settings, flags: dict[str, Any] | None = None) -> None:
    """Refuse a model no provider serves (`BadSettingError`), as `--model`
    refuses one, for a command that answers questions: at its start, before
    a browser does, rather than when its first question is asked. The
    message says where the name came from (`flags`: those `load` was given)
    and what changes it there: a variable comes before the file, so
    `config set` would not."""
    from .models import KNOWN_MODELS, provider_for  # light: loads no model library

    name = settings.model.strip()
    try:
        provider_for(name)
        return
    except ModelConfigError as exc:
        unknown = exc
    origin = _origin("model", flags or {}, _Found.read())
    also = "; --model overrides it for one command."
    if origin.kind == "env":
        raise BadSettingError(
            f"Unknown model {name!r}, set by the environment variable {origin.name}. Use {KNOWN_MODELS}: "
            f"set {origin.name} to one, or unset it (it comes before the settings file){also}"
        )
    if origin.kind == "file":
        raise BadSettingError(
            f"Unknown model {name!r}, set in the settings file {origin.name}. Use {KNOWN_MODELS}: "
            f"`chatagent config set model NAME`, or `chatagent config unset model` for the default "
            f"({DEFAULT_MODEL}){also}"
        )
    raise BadSettingError(unknown.message)


# --- provenance, for `config show` -------------------------------------------------


@dataclass(frozen=True)
class Origin:
    kind: Literal["flag", "env", "file", "default"]
    name: str = ""  # the variable, or the file's path

    def describe(self) -> str:
        return {"flag": "flag", "env": f"environment {self.name}", "file": f"file {self.name}",
                "default": "default"}[self.kind]


def _origin(key: str, flags: dict[str, Any], found: "_Found") -> Origin:
    if flags.get(key) is not None:
        return Origin("flag")
    if key in found.env:
        return Origin("env", _env_spelling(key))
    if key in found.file:
        return Origin("file", str(config_path()))
    return Origin("default")


@dataclass(frozen=True)
class _Found:
    """The settings the environment and the file set, read once for every key's origin."""

    env: frozenset[str]
    file: frozenset[str]

    @classmethod
    def read(cls) -> "_Found":
        def fields(names: Iterable[str]) -> frozenset[str]:
            return frozenset(f for f in map(_field_of, names) if f)

        return cls(fields(_Environment(Settings)()), fields(_read_file()))


def _env_spelling(key: str) -> str:
    """The variable that set `key`, as the user spelled it."""
    wanted = [n.lower() for n in [*_variables(Settings.model_fields[key]), f"CHATAGENT_{key}"]]
    present = {k.lower(): k for k in os.environ}
    return next((present[n] for n in wanted if n in present), wanted[0].upper())


@dataclass(frozen=True)
class Shown:
    key: str
    value: str  # secrets masked
    origin: Origin
    saved_for: str | None = None  # a key saved for another endpoint than the one in effect: that endpoint


def describe(settings: Settings, flags: dict[str, Any] | None = None) -> Iterator[Shown]:
    """Each setting's value (secrets masked) and where it came from. A key
    for another endpoint is shown as saved, with that endpoint: it is not used."""
    flags = flags or {}
    found = _Found.read()
    for key in Settings.model_fields:
        value = getattr(settings, key)
        origin = _origin(key, flags, found)
        saved = settings.saved_key(key) if key in KEY_ENDPOINTS and key not in flags else None
        if saved is not None:
            origin = Origin("env", _env_spelling(key)) if saved.source == "env" else Origin("file", str(config_path()))
        elsewhere = settings.key_elsewhere(key) if key in KEY_ENDPOINTS else None
        if elsewhere is not None:
            text = (f"{_mask(elsewhere.secret)} (set for {elsewhere.endpoint}, not sent to "
                    f"{settings.endpoint(KEY_ENDPOINTS[key])})").lstrip()
        elif isinstance(value, SecretStr):
            text = f"{_mask(value)} (set)".lstrip()
        else:
            text = "(not set)" if value is None else str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
        yield Shown(key, text, origin, elsewhere.endpoint if elsewhere else None)


def _mask(secret: SecretStr) -> str:
    """A key's last 4 characters ("…y987"), as `scrub` masks it wherever chatagent
    writes it, or nothing for a key too short to show any of."""
    shown = tail(secret.get_secret_value())
    return f"…{shown}" if shown else ""


# --- the file ------------------------------------------------------------------------


def _read_file() -> dict[str, Any]:
    path = config_path()
    if not path.exists():
        return {}
    import tomllib

    try:
        return tomllib.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"The settings file {path} cannot be read ({exc}). Fix it, or remove it to start again."
        ) from None


def file_sets(key: str) -> bool:
    """Whether the settings file sets `key` (by its name or one of its variables)."""
    return any(_field_of(name) == key for name in _read_file())


def set_value(key: str, value: str | None) -> Path:
    """`set_values` of one setting."""
    return set_values({key: value})


def set_values(changes: Mapping[str, str | None]) -> Path:
    """Write each `key = value` in the settings file (None: remove the key),
    all at once, after checking every value (`check_value`: one refused, and
    nothing is written). A provider key is written with the endpoint
    it is for, the one in effect once the change is made (the environment's,
    else the file's, else the provider's default): it is sent to no other
    (`Settings._bind_keys`). The file holds keys: it is private to the user
    (0600). A change that changes nothing (removing a key the file does not
    set) writes nothing."""
    import tomlkit

    unknown = ", ".join(repr(key) for key in changes if key not in Settings.model_fields)
    if unknown:
        raise ConfigError(f"Unknown setting {unknown}. Settings: {', '.join(Settings.model_fields)}.")
    checked = {key: None if value is None else check_value(key, value) for key, value in changes.items()}
    path = config_path()
    doc = tomlkit.parse(path.read_text()) if path.exists() else tomlkit.document()
    changed = False
    for key, value in checked.items():
        stale = [name for name in doc if _field_of(name) == key and (value is None or name != key)]  # one spelling
        if value is None and key in KEY_ENDPOINTS:
            stale += [name for name in doc if name == KEY_ENDPOINT.format(key=key)]
        for name in stale:
            doc.pop(name)
        if value is not None:
            doc[key] = value
        changed = changed or bool(stale) or value is not None
    bound = [(key, setting) for key, setting in KEY_ENDPOINTS.items() if checked.get(key) is not None]
    env = _Environment(Settings)() if bound else {}
    for key, setting in bound:
        doc[KEY_ENDPOINT.format(key=key)] = str(_value_of(env, setting) or _value_of(doc, setting)
                                                or default_endpoint(setting))
    if changed:
        _write_private(path, tomlkit.dumps(doc))
    return path


def check_value(key: str, value: str) -> Any:
    """`value` as the setting `key` takes it, as the file holds it, checked
    on its own (whatever the other settings say); else `BadValueError`. A
    model's name too: one no provider serves is refused as
    `models.provider_for` says, as it would fail every later ask."""
    probe = Settings.model_construct()
    try:
        Settings.__pydantic_validator__.validate_assignment(probe, key, value)
    except ValidationError as exc:
        reason = str(exc.errors()[0]["msg"])
        raise BadValueError(f"Bad value for {key}: {reason}.", reason=reason, setting=key) from None
    checked = getattr(probe, key)
    if key == "model":
        from .models import provider_for

        try:
            provider_for(checked.strip())
        except ModelConfigError as exc:
            raise BadValueError(exc.message, reason=exc.reason, setting=key) from None
    return checked.get_secret_value() if isinstance(checked, SecretStr) else checked


def _write_private(path: Path, text: str) -> None:
    """`text` in `path`, 0600 (`private_file.write_private`: no link planted where it
    writes is followed). A folder made for it is 0700, and chatagent's own folder
    (`config_dir`), if it was left open to others, is closed to them (a folder
    CHATAGENT_CONFIG names is the user's to choose: left as it is, and refused
    if another user could replace what is written there)."""
    from .private_file import NotPrivate, write_private

    make_private_dirs(path.parent)
    if path.parent.resolve() == config_dir().resolve():
        tighten_dir(path.parent)
    try:
        write_private(path, text)
    except NotPrivate as exc:
        raise ConfigError(
            f"The settings {exc.what} {exc.path} {exc.why}, so they could read or replace the keys written there: "
            f"nothing was written. Make it yours alone (chown it to yourself, `chmod go-w {exc.path}`), or keep "
            f"the settings elsewhere with CHATAGENT_CONFIG=FILE in a folder of your own."
        ) from None
    except OSError as exc:
        raise ConfigError(f"The settings file {path} could not be written ({exc}); it is as it was.") from None
