"""Gemini through langchain-google-genai (google-genai SDK over httpx)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ModelAuthError, ModelConfigError, ModelError
from .base import Provider

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings
    from .window import Window

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gemini-2.5-flash"
# Windows where the API does not say (docs/models.md): Gemini 2.5's input limit,
# and a conservative one for the Gemma models it also serves.
GEMINI_DEFAULT_WINDOW = 1_048_576
GEMMA_DEFAULT_WINDOW = 32_768


class GeminiProvider(Provider):
    name = "gemini"
    prefixes = ("gemini-", "models/gemini-", "gemma-")
    key_setting = "GOOGLE_API_KEY (`chatagent config set google_api_key KEY`)"
    api_key: ClassVar[str] = "google_api_key"
    required_key: ClassVar[str] = "google_api_key"
    endpoint_setting = "gemini_base_url (`chatagent config set gemini_base_url URL`, or GOOGLE_GEMINI_BASE_URL)"

    def create(self, model: str, settings: "Settings") -> BaseChatModel:
        from langchain_google_genai import ChatGoogleGenerativeAI

        key = settings.secret(self.required_key)
        if not key and (elsewhere := settings.key_elsewhere(self.required_key)):
            reason = (f"Model {model!r} has no Gemini API key for {self.endpoint(settings)}: {elsewhere.describe()} "
                      f"is for {elsewhere.endpoint}, and a key goes only to the endpoint it was saved for.")
            raise ModelConfigError(
                f"{reason} Save the key for this endpoint with `chatagent config set google_api_key KEY` (or use "
                "the offline model: --model extractive).", reason=reason, setting=self.required_key,
            )
        if not key:
            raise ModelConfigError(
                f"Model {model!r} needs a Gemini API key: set GOOGLE_API_KEY or run "
                "`chatagent config set google_api_key KEY` (or use the offline model: --model extractive).",
                reason=f"Model {model!r} needs a Gemini API key.", setting=self.required_key,
            )
        # One attempt per call: chatagent.retry retries, visibly and within bounds
        # (the SDK's default retries silently for up to a minute).
        kwargs: dict[str, Any] = {"model": model, "google_api_key": key, "max_retries": 1}
        if settings.gemini_base_url:
            kwargs["base_url"] = settings.gemini_base_url
        return ChatGoogleGenerativeAI(**kwargs)

    def endpoint(self, settings: "Settings") -> str:
        return settings.endpoint("gemini_base_url")

    def label(self, model: str) -> str:
        return model.removeprefix("models/")

    async def serves(self, settings: "Settings", http: "httpx.AsyncClient") -> list[str]:
        from .catalog import ListingError, json_of, status_problem

        key = settings.secret(self.required_key)
        if not key or settings.key_elsewhere(self.required_key):
            raise ListingError("No Gemini API key for this endpoint.", fix="`chatagent config set google_api_key KEY`.",
                               setting=self.required_key)
        base = self.endpoint(settings).rstrip("/")
        response = await http.get(f"{base}/v1beta/models", params={"pageSize": 1000}, headers={"x-goog-api-key": key})
        status_problem(response, self)
        return [
            self.label(str(m["name"])) for m in json_of(response, self).get("models", [])
            if isinstance(m, dict) and "generateContent" in m.get("supportedGenerationMethods", [])
            and any(self.label(str(m.get("name", ""))).startswith(p) for p in ("gemini-", "gemma-"))
        ]

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        """The model's `inputTokenLimit` (`models.get`): what a request may hold;
        the answer (up to its `outputTokenLimit`) does not come out of it."""
        from .catalog import json_of
        from .window import Window

        key = settings.secret(self.required_key)
        if not key or settings.key_elsewhere(self.required_key):
            return None  # the model cannot be made without one either: it says so
        base = self.endpoint(settings).rstrip("/")
        name = self.label(model)
        response = await http.get(f"{base}/v1beta/models/{name}", headers={"x-goog-api-key": key})
        if response.status_code != 200:
            return None
        limit = json_of(response, self).get("inputTokenLimit")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            return None
        return Window(tokens=limit, source="server models.get inputTokenLimit", origin="server")

    def default_window(self, model: str, endpoint: str) -> int:
        return GEMMA_DEFAULT_WINDOW if self.label(model).startswith("gemma-") else GEMINI_DEFAULT_WINDOW

    def classify(self, exc: BaseException) -> ModelError | None:
        from google.genai.errors import APIError, UnknownApiResponseError

        from ..retry import causes, malformed

        for e in causes(exc):
            if isinstance(e, UnknownApiResponseError):
                return malformed(e)
            # A bad key is a 400 INVALID_ARGUMENT whose ErrorInfo reason says so.
            if isinstance(e, APIError) and "API_KEY_INVALID" in _reasons(e):
                refused = f"The Gemini API refused the key ({e.code} {e.message})."
                return ModelAuthError(f"{refused} Check {self.key_setting}.", reason=refused, setting=self.api_key)
        return None

    async def warm(self, chat: BaseChatModel) -> None:
        """Open the client's HTTP connection ahead of the first question and
        build what its first generate request would otherwise build."""
        models = getattr(getattr(getattr(chat, "client", None), "aio", None), "models", None)
        if models is None:
            return
        try:
            # A metadata GET: sets up TLS/HTTP keep-alive; costs no tokens.
            await asyncio.wait_for(models.get(model=getattr(chat, "model", "")), timeout=5)
        except Exception as exc:  # noqa: BLE001 - warming is best effort
            log.debug("model warm-up skipped: %s", exc)
        _warm_generate_path(chat)


def _reasons(e: Any) -> set[str]:
    details = getattr(e, "details", None)
    error = details.get("error") if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    return {d.get("reason") for d in items or [] if isinstance(d, dict) and isinstance(d.get("reason"), str)}


def _warm_generate_path(chat: BaseChatModel) -> None:
    """The first streamed request of a process spends ~60-200 ms building
    google-genai's pydantic models (they are built on first use) and importing
    LangChain's tracing helpers; do that now, offline. Best effort: these are
    the client libraries' internals, and nothing breaks if they move."""
    from langchain_core.messages import HumanMessage, SystemMessage

    try:
        from langchain_core.callbacks.manager import AsyncCallbackManager

        AsyncCallbackManager.configure()
        from google.genai import types

        prepare = getattr(chat, "_prepare_request", None)
        request = prepare([SystemMessage("warm-up"), HumanMessage("warm-up")]) if callable(prepare) else None
        params = getattr(types, "_GenerateContentParameters", None)
        if params is not None and isinstance(request, dict):
            # Validate and serialise as the SDK will: fills pydantic's and abc's caches.
            from google.genai import _common

            _common.convert_to_dict(params(**request))
        chunk = {
            "candidates": [{"content": {"parts": [{"text": "ok"}], "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": "warm-up",
            "responseId": "warm-up",
        }
        types.GenerateContentResponse._from_response(response=chunk, kwargs={})
    except Exception as exc:  # noqa: BLE001 - warming is best effort
        log.debug("generate-path warm-up skipped: %s", exc)
