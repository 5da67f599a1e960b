"""The settings the side panel shows and changes: which model answers, how
to reach it, and its window (`context_window`, empty: asked of its server).
They live in the user's settings file (the one `chatagent config`
writes, private to the user), never in the extension's storage; the
environment still comes first, and the panel is told when it does.

The extension is not trusted: an endpoint it saves must be https (or http on
this machine), and a key saved before goes to no endpoint but its own
(`chatagent.settings`): the panel is told to enter the key for the new server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic.alias_generators import to_camel

from chatagent import settings as config
from chatagent.errors import ChatAgentError, ModelConfigError, ModelNotFoundError
from chatagent.events import ErrorEvent
from chatagent.models import provider_for
from chatagent.settings import KEY_ENDPOINTS, Settings, default_endpoint

from .messages import (
    PANEL_SETTINGS,
    ModelCheckedMessage,
    ModelCheckMessage,
    ModelForm,
    PanelSettingValues,
    SettingsMessage,
    ShownSetting,
)

if TYPE_CHECKING:
    from chatagent.models import Provider
    from chatagent.models.catalog import Served

# What each setting is called in the panel, for messages about it.
PANEL_NAMES = {
    "model": "Model",
    "google_api_key": "Gemini API key",
    "gemini_base_url": "Gemini endpoint",
    "openai_base_url": "Server URL",
    "openai_api_key": "Server API key",
    "context_window": "Context window",
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
    if setting == "context_window":  # a window too small for the question
        return f"Ask about fewer tabs, or, if the model's server gives it more, enter that in {field}."
    return ""


class PanelSettingError(ChatAgentError):
    code = "bad_setting"


def describe(request_id: str, settings: Settings, flags: dict[str, Any]) -> SettingsMessage:
    shown = {x.key: x for x in config.describe(settings, flags)}
    return SettingsMessage(
        id=request_id,
        model=provider_for(settings.model).label(settings.model),
        form=_form(settings),
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


def _form(settings: Settings) -> ModelForm:
    from chatagent.models.openai import LocalServer, OpenAIProvider

    provider = provider_for(settings.model)
    if isinstance(provider, OpenAIProvider):  # a local server by name is an OpenAI-compatible one at its address
        return ModelForm(provider="openai", model=provider.served_name(settings.model),
                         base_url=provider.endpoint(settings) if isinstance(provider, LocalServer) else None)
    return ModelForm(provider=provider.name, model=settings.model)


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
    config.set_values(_checked(values))


def _checked(values: PanelSettingValues) -> dict[str, str | None]:
    """The values the panel sent, each checked as the settings file would
    hold it (`PanelSettingError` names the field); None: back to the default."""
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
    return given


async def check_model(request: ModelCheckMessage, flags: dict[str, Any]) -> ModelCheckedMessage:
    """The panel's "Test connection": the form as typed (checked as `save`
    would, not saved) over the saved settings, the host's own flags over
    both; a key saved for another endpoint than the typed one is not sent
    there (`Settings`). What is wrong is said in the panel's words."""
    from chatagent.models import PROVIDERS
    from chatagent.models.catalog import catalog, check  # httpx: loaded for a test, not at the host's start

    typed = _checked(request.values)
    name = typed.pop("model", None)
    provider = next(p for p in PROVIDERS if p.name == request.provider)
    if name is not None and provider_for(name) is not provider:
        raise PanelSettingError(f"{PANEL_NAMES['model']}: {name!r} is not a {request.provider} model.")
    # An endpoint cleared in the form is its default; a key not typed is the saved one.
    typed = {k: v if v is not None else default_endpoint(k) for k, v in typed.items()
             if v is not None or k in KEY_ENDPOINTS.values()}
    settings = Settings.load(**{**typed, **flags})
    served = await check(name, settings) if name else (await catalog(settings, [provider]))[0]
    return ModelCheckedMessage(
        id=request.id, model=provider.label(name) if name else None, endpoint=served.endpoint,
        models=[provider.served_name(m) for m in served.models],
        problem=_served_in_panel_words(served, provider, name or ""),
    )


def _served_in_panel_words(served: "Served", provider: Provider, name: str) -> str | None:
    if served.problem is None:
        return None
    if served.setting == "model":  # the server is there, without that model: name what it has, as the field takes them
        listed = ", ".join(provider.served_name(m) for m in served.models[:10]) or "none"
        return f"It has no model “{provider.served_name(name)}”; it serves: {listed}. Choose one of those."
    reason = served.reason or served.problem
    return f"{reason} Check the {PANEL_NAMES[served.setting]}." if served.setting in PANEL_NAMES else reason
