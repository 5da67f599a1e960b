"""What the stand-ins of the OpenAI-compatible model servers do with a
prompt longer than their window, as the servers they stand for do."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from chatagent.models import load_model
from chatagent.settings import Settings
from chatagent.testing.ollama_server import OllamaModel, OllamaServer
from chatagent.testing.openai_server import ChatReply, LlamaCppServer


def openai_at(url: str, **more: object) -> Settings:
    return Settings(**{"model": "openai:local", "openai_base_url": url, **more})


# --- the stand-ins: a prompt longer than the window, as each server treats it -------------------


async def test_ollama_cuts_a_long_prompt_silently_and_llamacpp_refuses_it() -> None:
    long = [SystemMessage("Answer from the page."), HumanMessage("word " * 3000), HumanMessage("How much?")]
    with OllamaServer([OllamaModel("llama3.2:latest")], default_num_ctx=2048,
                      replies=[ChatReply(text="It costs $5 [Tab 1].")]) as ollama:
        reply = await load_model("openai:llama3.2", openai_at(ollama.url)).chat.ainvoke(long)
        [cut] = ollama.chat_requests
    assert reply.content == "It costs $5 [Tab 1]." and reply.usage_metadata["input_tokens"] == 2048
    assert cut.truncated and not cut.fits and cut.window == 2048 and cut.prompt_tokens > 3000
    with LlamaCppServer(n_ctx=2048) as llamacpp:
        model = load_model("openai:local", openai_at(llamacpp.url))
        with pytest.raises(Exception) as refused:
            await model.chat.ainvoke(long)
        [request] = llamacpp.chat_requests
    assert request.status == 400 and not request.fits
    assert "the request exceeds the available context size" in model.classify(refused.value).message
