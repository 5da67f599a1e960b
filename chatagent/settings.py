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
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .errors import ChatAgentError, ModelConfigError, UsageError
from .limits import MIN_INPUT_BUDGET, MIN_TAB_BUDGET
from .locations import config_dir, config_path, make_private_dirs, tighten_dir

# Files in which a browser's launcher exports its own Google API key (Debian, Ubuntu).
BROWSER_KEY_FILES = (Path("/etc/chromium.d/apikeys"), Path("/etc/chromium-browser/apikeys"))



class ConfigError(ChatAgentError):
    """A setting has a value that cannot be used, or the settings file cannot be read or written."""

    code = "config_error"


class BadValueError(ConfigError):
    """A value the setting cannot take, refused before it is written (`set_value`)."""


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

    model: str = Field("extractive", description="the model that answers: extractive (offline), "
                       "gemini-2.5-flash, openai:MODEL")
    google_api_key: SecretStr | None = Field(
        None, validation_alias=_env("GOOGLE_API_KEY", "GEMINI_API_KEY", "CHATAGENT_GOOGLE_API_KEY"),
        description="Gemini API key")
    gemini_base_url: str | None = Field(
        None, validation_alias=_env("GOOGLE_GEMINI_BASE_URL", "CHATAGENT_GEMINI_BASE_URL"),
        description="Gemini API endpoint (default: Google's)")
    openai_base_url: str = Field(
        "http://127.0.0.1:11434/v1", validation_alias=_env("CHATAGENT_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        description="OpenAI-compatible server for openai:MODEL (default: Ollama's)")
    openai_api_key: SecretStr | None = Field(
        None, validation_alias=_env("OPENAI_API_KEY", "CHATAGENT_OPENAI_API_KEY"),
        description="key for the OpenAI-compatible server, if it needs one")
    budget: int = Field(2000, ge=MIN_TAB_BUDGET, description="tokens of page text per tab")
    timeout: float = Field(15.0, gt=0, description="seconds to wait for each page to load")
    deadline: float = Field(180.0, gt=0, description="seconds after which a question is given up")
    max_response_mb: float = Field(50.0, gt=0, description="a page, or a file it loads, larger than this many "
                                   "MB is not loaded (the tab says so)")
    max_tabs: int = Field(20, ge=1, description="`chatagent mcp` and the daemon: tabs open at once across "
                          "calls; a call beyond waits its turn")
    input_budget: float = Field(8.0, ge=1, description="a question's input tokens, all model calls "
                                f"together, stay within this many times its first request (never below {MIN_INPUT_BUDGET:,})")
    cache: bool = Field(True, description="answer a repeated question about unchanged pages from memory "
                        "(chat and the side panel)")
    cdp: str | None = Field(None, description="attach to this Chrome (--remote-debugging-port) instead of "
                            "launching one, e.g. http://127.0.0.1:9222")
    browser_ws: str | None = Field(None, description="use a browser from this Playwright browser server "
                                   "(playwright run-server, Browserless, a grid), e.g. ws://127.0.0.1:3000/")
    browser: str | None = Field(None, description="the Chrome/Chromium executable to launch (default: found)")
    mcp_token: SecretStr | None = Field(None, description="`chatagent mcp --http`: the bearer token clients "
                                        "must send (required when listening beyond 127.0.0.1)")
    tool_timeout: float = Field(20.0, gt=0, description="side panel: seconds to wait for the extension "
                                "to run one browser tool")
    daemon: bool = Field(False, description="`chatagent ask` starts a background daemon on first use and "
                         "is answered by it, warm, from then on (`chatagent daemon`)")
    daemon_idle: float = Field(900.0, gt=0, description="seconds a daemon stays up without a question")

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


# --- where settings come from -----------------------------------------------------


def _file_source(settings_cls: type[BaseSettings]) -> PydanticBaseSettingsSource:
    path = config_path()
    try:
        return TomlConfigSettingsSource(settings_cls, toml_file=path)
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(
            f"The settings file {path} cannot be read ({exc}). Fix it, or remove it to start again "
            "(`chatagent config path` shows where it is)."
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
    """The environment, minus a GOOGLE_API_KEY that is the browser launcher's own."""

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        foreign = browser_launcher_keys()
        for key in [k for k, v in data.items() if _field_of(k) == "google_api_key" and v in foreign]:
            del data[key]
        return data


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
            f"({Settings.model_fields['model'].default}){also}"
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


def describe(settings: Settings, flags: dict[str, Any] | None = None) -> Iterator[Shown]:
    """Each setting's value (secrets masked) and where it came from."""
    flags = flags or {}
    found = _Found.read()
    for key in Settings.model_fields:
        value = getattr(settings, key)
        if isinstance(value, SecretStr):
            raw = value.get_secret_value()
            text = f"…{raw[-4:]} (set)" if len(raw) > 8 else "(set)"
        else:
            text = "(not set)" if value is None else str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
        yield Shown(key, text, _origin(key, flags, found))


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
    """Write `key = value` in the settings file (None: remove the key), after
    checking the value (`BadValueError`; a model's name too: one no provider
    serves is refused as `models.provider_for` says). The file holds keys: it
    is private to the user (0600).
    Removing a key the file does not set writes nothing."""
    import tomlkit

    if key not in Settings.model_fields:
        raise ConfigError(f"Unknown setting {key!r}. Settings: {', '.join(Settings.model_fields)}.")
    path = config_path()
    doc = tomlkit.parse(path.read_text()) if path.exists() else tomlkit.document()
    if value is None:
        names = [name for name in doc if _field_of(name) == key]
        if not names:
            return path
        for name in names:
            doc.pop(name)
    else:
        try:
            checked = Settings.model_validate({key: value}).model_dump(mode="python")[key]
        except ValidationError as exc:
            raise BadValueError(f"Bad value for {key}: {exc.errors()[0]['msg']}.") from None
        if key == "model":  # a name no provider serves would fail every later ask
            from .models import provider_for

            try:
                provider_for(checked.strip())
            except ModelConfigError as exc:
                raise BadValueError(exc.message) from None
        doc[key] = checked.get_secret_value() if isinstance(checked, SecretStr) else checked
    _write_private(path, tomlkit.dumps(doc))
    return path


def _write_private(path: Path, text: str) -> None:
    """`text` in `path`, 0600. A folder made for it is 0700, and chatagent's
    own folder (`config_dir`), if it was left open to others, is closed to them
    (a folder CHATAGENT_CONFIG names is the user's to choose: left as it is)."""
    make_private_dirs(path.parent)
    if path.parent.resolve() == config_dir().resolve():
        tighten_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, stat.S_IRUSR | stat.S_IWUSR)  # whatever the umask
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
