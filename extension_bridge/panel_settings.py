"""The settings the side panel shows and changes: which model answers and how
to reach it. They live in the user's settings file (the one `chatagent config`
writes, private to the user), never in the extension's storage; the
environment still comes first, and the panel is told when it does.

The extension is not trusted: an endpoint it saves must be https (or http on
this machine), and a key saved before goes to no endpoint but its own
(`chatagent.settings`): the panel is told to enter the key for the new server."""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from chatagent import settings as config
from chatagent.errors import ChatAgentError, ModelConfigError, ModelNotFoundError
from chatagent.events import ErrorEvent
from chatagent.models import provider_for
from chatagent.settings import KEY_ENDPOINTS, Settings

from .messages import PANEL_SETTINGS, PanelSettingValues, SettingsMessage, ShownSetting

# What each setting is called in the panel, for messages about it.
PANEL_NAMES = {
    "model": "Model",
    "google_api_key": "Gemini API key",
    "gemini_base_url": "Gemini endpoint",
    "openai_base_url": "Server URL",
    "openai_api_key": "Server API key",
}


def in_panel_words(error: ErrorEvent) -> ErrorEvent:
    """An error as the panel says it: what happened, then what to change in
    the panel's Settings, instead of the flag, variable or `chatagent config`
    command the command line's message names. A setting the panel does not
    show is not named at all: what happened is said, and what the panel can do."""
    if error.setting is None:
        return error
    reason = error.reason or error.message
    fix = _fix_in_panel(error.code, error.setting)
    return error.model_copy(update={"message": f"{reason} {fix}" if fix else reason, "reason": None})


def _fix_in_panel(code: str, setting: str) -> str:
    field = f"Settings (⚙) → {PANEL_NAMES[setting]}" if setting in PANEL_NAMES else ""
    if setting in KEY_ENDPOINTS:  # an API key: missing, or refused
        return f"Enter one in {field}, or choose Offline." if code == ModelConfigError.code else f"Check {field}."
    if setting in KEY_ENDPOINTS.values():  # an endpoint
        return f"Is the server running there? To use another, change {field}."
    if setting == "model":  # a name the service does not know, or a reply that was no answer
        if code in (ModelConfigError.code, ModelNotFoundError.code):
            return f"Choose another in {field}."
        return f"Ask again, or choose another model in {field}."
    if setting == "deadline":
        return "Ask again; a narrower question, or fewer tabs, is answered sooner."
    return ""


class PanelSettingError(ChatAgentError):
    code = "bad_setting"


def describe(request_id: str, settings: Settings, flags: dict[str, Any]) -> SettingsMessage:
    shown = {x.key: x for x in config.describe(settings, flags)}
    return SettingsMessage(
        id=request_id,
        model=provider_for(settings.model).label(settings.model),
        settings={
            to_camel(key): ShownSetting(
                value=None if shown[key].value == "(not set)" or shown[key].saved_for else shown[key].value,
                source=shown[key].origin.kind, origin=shown[key].origin.describe(), saved_for=shown[key].saved_for,
            )
            for key in PANEL_SETTINGS
        },
        path=str(config.config_path()),
        problem=_problem(settings),
    )


def _problem(settings: Settings) -> str | None:
    """The missing key the first question would fail on (a `model_config`
    error), or a key saved for another server than the one in effect, said
    in the panel's words; None when there is none."""
    provider = provider_for(settings.model)
    label = provider.label(settings.model)
    if provider.api_key and (elsewhere := settings.key_elsewhere(provider.api_key)):
        server = settings.endpoint(KEY_ENDPOINTS[provider.api_key])
        needs = ", or choose Offline" if provider.required_key else " if it needs one"
        return (f"{label}'s {PANEL_NAMES[provider.api_key]} is for {elsewhere.endpoint}, not {server}: "
                f"enter the key for this server{needs}.")
    key = provider.required_key
    if key and not settings.secret(key):
        return f"{label} needs a {PANEL_NAMES[key]}: enter one, or choose Offline."
    return None


def save(values: PanelSettingValues) -> None:
    """Check every value first, then write them together: a bad one changes
    nothing, and a key sent with an endpoint is saved for that endpoint."""
    given = {key: getattr(values, key) for key in values.model_fields_set if key in PANEL_SETTINGS}
    for key, value in given.items():
        value = value.strip() if value is not None else None
        given[key] = value or None
        if not value:
            continue
        try:
            config.check_value(key, value)
        except config.BadValueError as exc:
            raise PanelSettingError(f"{PANEL_NAMES[key]}: {exc.reason}") from None
    config.set_values(given)
