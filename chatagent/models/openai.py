"""OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) via the
optional langchain-openai extra: `openai:MODEL`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import ModelConfigError
from .base import Provider

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings

log = logging.getLogger(__name__)


class OpenAIProvider(Provider):
    name = "openai"
    prefixes = ("openai:",)
    api_key = "openai_api_key"
    key_setting = "OPENAI_API_KEY (`chatagent config set openai_api_key KEY`) and openai_base_url"
    endpoint_setting = (
        "openai_base_url (`chatagent config set openai_base_url URL`, or CHATAGENT_OPENAI_BASE_URL)"
    )

    def create(self, model: str, settings: "Settings") -> BaseChatModel:
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise ModelConfigError(
                "openai:* models need the optional extra: pip install 'chatagent[openai]'"
            ) from exc
        if elsewhere := settings.key_elsewhere(self.api_key):  # a server may need none: say why it gets none
            log.warning("%s (openai_api_key) is for %s, not %s: it is not sent there (`chatagent config set "
                        "openai_api_key KEY` saves one for it).", elsewhere.describe().capitalize(),
                        elsewhere.endpoint, settings.openai_base_url)
        return ChatOpenAI(
            model=model.removeprefix("openai:").strip(),  # never empty: `matches` wants a name after it
            base_url=settings.openai_base_url,
            # Local servers ignore the key, but the client insists on one.
            api_key=settings.secret("openai_api_key") or "not-needed",
            streaming=True, stream_usage=True,
            max_retries=0,  # chatagent.retry retries, visibly and within bounds
        )

    def endpoint(self, settings: "Settings") -> str:
        return settings.openai_base_url
