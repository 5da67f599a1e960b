"""The settings the side panel shows and changes: which model answers and how
to reach it. They live in the user's settings file (the one `chatagent config`
writes, private to the user), never in the extension's storage; the
environment still comes first, and the panel is told when it does."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from chatagent import settings as config
from chatagent.errors import ChatAgentError
from chatagent.models import provider_for
from chatagent.settings import Settings

from .messages import PANEL_SETTINGS, PanelSettingValues, SettingsMessage, ShownSetting

# What each setting is called in the panel, for messages about it.
PANEL_NAMES = {
    "model": "Model",
    "google_api_key": "Gemini API key",
    "gemini_base_url": "Gemini endpoint",
    "openai_base_url": "Server URL",
    "openai_api_key": "Server API key",
}


class PanelSettingError(ChatAgentError):
    code = "bad_setting"


def describe(request_id: str, settings: Settings, flags: dict[str, Any]) -> SettingsMessage:
    shown = {x.key: x for x in config.describe(settings, flags)}
    return SettingsMessage(
        id=request_id,
        model=provider_for(settings.model).label(settings.model),
        settings={
            to_camel(key): ShownSetting(
                value=None if shown[key].value == "(not set)" else shown[key].value,
                source=shown[key].origin.kind, origin=shown[key].origin.describe(),
            )
            for key in PANEL_SETTINGS
        },
        path=str(config.config_path()),
        problem=_problem(settings),
    )


def _problem(settings: Settings) -> str | None:
    """The missing key the first question would fail on (a `model_config`
    error), said in the panel's words; None when there is none."""
    provider = provider_for(settings.model)
    key = provider.required_key
    if key and not settings.secret(key):
        return f"{provider.label(settings.model)} needs a {PANEL_NAMES[key]}: enter one, or choose Offline."
    return None


def save(values: PanelSettingValues) -> None:
    """Check every value first, then write them: a bad one changes nothing."""
    given = {key: getattr(values, key) for key in values.model_fields_set if key in PANEL_SETTINGS}
    for key, value in given.items():
        if value is None:
            continue
        value = value.strip()
        given[key] = value or None
        if not value:
            continue
        try:
            Settings.model_validate({key: value})
            if key == "model":
                provider_for(value)
        except (ChatAgentError, ValueError) as exc:
            reason = exc.message if isinstance(exc, ChatAgentError) else _first_error(exc)
            raise PanelSettingError(f"{PANEL_NAMES[key]}: {reason}") from None
    for key, value in given.items():
        config.set_value(key, value)


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    return str(errors()[0]["msg"]) if callable(errors) else str(exc)
