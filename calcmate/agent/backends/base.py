"""The backend interface and its config.

``chat(messages, tools, sampling)`` takes OpenAI-format messages (assistant ``tool_calls``
with JSON-string arguments, ``tool`` results) and returns the assistant's text, with native
tool calls rendered as Qwen3 hermes ``<tool_call>`` blocks so every backend looks the same to
the protocol. Sampling fields left ``None`` fall back to the model's generation config.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Sampling(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = None
    max_tokens: int | None = Field(None, gt=0)
    repetition_penalty: float | None = Field(None, gt=0)
    seed: int | None = None

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class BackendConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["vllm", "openai", "transformers"] = "vllm"
    model: str | None = None  # path or hub id; for openai, the served model name
    base_url: str | None = None  # openai: e.g. http://localhost:8000/v1
    api_key_env: str = "OPENAI_API_KEY"  # openai: the variable holding the key (never the key itself)
    concurrency: int = Field(16, ge=1)  # openai: requests in flight
    timeout_s: float = Field(600, gt=0)
    max_model_len: int | None = None  # vllm
    tensor_parallel_size: int = Field(1, ge=1)  # vllm
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)  # vllm
    dtype: str = "auto"  # vllm / transformers
    enable_thinking: bool | None = None  # passed to the chat template when set
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)  # extra vllm.LLM(...) arguments
    sampling: Sampling = Field(default_factory=Sampling)


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    latency_s: float = 0.0


class Backend(ABC):
    model_name: str = "model"

    @abstractmethod
    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                   sampling: Sampling | None = None) -> Generation: ...

    async def aclose(self) -> None:
        """Release the engine / connections."""


def render_tool_calls(content: str | None, tool_calls: list[Any] | None) -> str:
    """Hermes text for structured tool calls (what an OpenAI server's tool parser took out)."""
    import json

    parts = [content or ""]
    for c in tool_calls or []:
        fn = c["function"] if isinstance(c, dict) else c.function
        name = fn["name"] if isinstance(fn, dict) else fn.name
        args = fn["arguments"] if isinstance(fn, dict) else fn.arguments
        try:
            args_obj = json.loads(args) if isinstance(args, str) else args
        except json.JSONDecodeError:
            args_obj = args  # leave it malformed: the protocol reports it
        body = json.dumps({"name": name, "arguments": args_obj}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(p for p in parts if p)


def make_backend(cfg: BackendConfig) -> Backend:
    if not cfg.model:
        raise ValueError("backend.model: a model path or id is required (or pass --model)")
    if cfg.kind == "vllm":
        from calcmate.agent.backends.vllm_backend import VLLMBackend

        return VLLMBackend(cfg)
    if cfg.kind == "openai":
        from calcmate.agent.backends.openai_http import OpenAIBackend

        return OpenAIBackend(cfg)
    from calcmate.agent.backends.transformers_backend import TransformersBackend

    return TransformersBackend(cfg)
