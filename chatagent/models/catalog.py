"""What each provider serves here, asked of its server: `chatagent models`
and a connection test for one model name, each problem said in words (not
running, not that kind of server, a refused key, no such model), with the
window the model would be given and where that came from (`window.py`).

Names come back as `--model` takes them (`ollama:llama3.2`); they are a
server's words, so front ends show them as untrusted text."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx
from pydantic import BaseModel, Field

from ..settings import KEY_ENDPOINTS, Settings
from . import PROVIDERS, provider_for
from .base import Provider
from .window import Window, ask_server, from_setting

TIMEOUT_S = 3.0  # a local server answers its model list at once; a remote one within this
MAX_MODELS = 200  # names shown per provider: a gateway may list thousands


class Served(BaseModel):
    """One provider: the models its server lists, or why it lists none.
    `problem` says it in the command line's words; a front end with words of
    its own says `reason` (what happened) and how to change `setting` (the
    `Settings` key that fixes it, if one does), as it does for errors."""

    provider: str
    endpoint: str = ""
    models: list[str] = Field(default_factory=list)
    problem: str | None = None
    reason: str | None = None
    setting: str | None = None
    # `check` only: the window the model is given (the `context_window` setting,
    # else its server's, else its provider's default), and, where the setting
    # overrides it, what the server (or the default) says.
    window: Window | None = None
    server_window: Window | None = None


class ListingError(Exception):
    """Why a provider's server listed no models: what happened, the command
    line's fix, and the setting that fixes it."""

    def __init__(self, reason: str, *, fix: str = "", setting: str | None = None) -> None:
        super().__init__(f"{reason} {fix}".strip())
        self.reason = reason
        self.setting = setting


async def catalog(settings: Settings, providers: Sequence[Provider] = PROVIDERS) -> list[Served]:
    """Every provider, asked at once."""
    async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as http:
        return list(await asyncio.gather(*(_served(p, settings, http) for p in providers)))


async def check(name: str, settings: Settings, *, window: bool = False) -> Served:
    """The provider of `name`, asked whether it serves it: `problem` says
    what is wrong (the provider's or the name's), None when it does.
    `window`: and the window `name` would be given (`Served.window`,
    `server_window`), asked at the same time."""
    provider = provider_for(name)
    async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as http:
        served, found = await asyncio.gather(
            _served(provider, settings, http), ask_server(provider, name, settings, http) if window else _none())
    if found is not None and settings.context_window is not None:
        served.window, served.server_window = from_setting(settings.context_window), found
    elif found is not None:
        served.window = found
    if served.problem is None and provider.lists_every_name and name not in served.models:
        listed = ", ".join(served.models[:10]) or "none"
        served.problem = served.reason = f"The server has no model {name!r}; it serves: {listed}."
        served.setting = "model"
    return served


async def _none() -> None:
    return None


def endpoint_setting(provider: Provider) -> str | None:
    """The setting that points `provider` elsewhere (None: its address is fixed)."""
    return KEY_ENDPOINTS.get(provider.api_key or "")


async def _served(provider: Provider, settings: Settings, http: httpx.AsyncClient) -> Served:
    endpoint = provider.endpoint(settings)
    try:
        models = await provider.serves(settings, http)
    except ListingError as exc:
        return Served(provider=provider.name, endpoint=endpoint, problem=str(exc), reason=exc.reason,
                      setting=exc.setting)
    except httpx.HTTPError as exc:
        if isinstance(exc, httpx.ConnectError):
            reason = "Nothing is listening there: is the server running?"
        elif isinstance(exc, httpx.TimeoutException):
            reason = f"It did not answer within {TIMEOUT_S:g} s."
        else:
            reason = f"Could not ask it: {exc}."
        return Served(provider=provider.name, endpoint=endpoint, problem=reason, reason=reason,
                      setting=endpoint_setting(provider))
    return Served(provider=provider.name, endpoint=endpoint, models=models[:MAX_MODELS])


def status_problem(response: httpx.Response, provider: Provider) -> None:
    """Raise `ListingError` in words for a listing request that failed."""
    if response.status_code in (401, 403):
        raise ListingError(f"It refused the key ({response.status_code}).", fix=f"Check {provider.key_setting}.",
                           setting=provider.api_key)
    if response.status_code == 404:
        raise ListingError(f"It has no {response.url.path} (404): is it the model server's URL?",
                           setting=endpoint_setting(provider))
    if response.is_error:
        raise ListingError(f"It answered {response.status_code} to {response.url.path}.",
                           setting=endpoint_setting(provider))


def json_of(response: httpx.Response, provider: Provider) -> dict:
    try:
        body = response.json()
    except ValueError:
        raise ListingError(f"Its {response.url.path} is not JSON: is it the model server's URL?",
                           setting=endpoint_setting(provider)) from None
    if not isinstance(body, dict):
        raise ListingError(f"Its {response.url.path} is not a model list: is it the model server's URL?",
                           setting=endpoint_setting(provider))
    return body
