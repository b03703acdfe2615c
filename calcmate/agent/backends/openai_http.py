"""Any OpenAI-compatible chat endpoint (``vllm serve --enable-auto-tool-choice
--tool-call-parser hermes``, a hosted API): async, at most ``concurrency`` requests in flight."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from calcmate.agent.backends.base import Backend, BackendConfig, Generation, Sampling, render_tool_calls


class OpenAIBackend(Backend):
    def __init__(self, cfg: BackendConfig):
        from openai import AsyncOpenAI

        if not cfg.base_url:
            raise ValueError("backend.base_url: required for kind=openai, e.g. http://localhost:8000/v1")
        self.cfg, self.model_name = cfg, cfg.model or "model"
        self.client = AsyncOpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "EMPTY",
                                  timeout=cfg.timeout_s, max_retries=3)
        self._sem = asyncio.Semaphore(cfg.concurrency)

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                   sampling: Sampling | None = None) -> Generation:
        s = {**self.cfg.sampling.given(), **(sampling.given() if sampling else {})}
        extra: dict[str, Any] = {}
        for k in ("top_k", "repetition_penalty"):  # vLLM extensions, not in the OpenAI schema
            if k in s:
                extra[k] = s.pop(k)
        if self.cfg.enable_thinking is not None:
            extra["chat_template_kwargs"] = {"enable_thinking": self.cfg.enable_thinking}
        kw: dict[str, Any] = {"model": self.model_name, "messages": messages, **s}
        if tools:
            kw["tools"] = tools
        if extra:
            kw["extra_body"] = extra
        async with self._sem:
            t = time.perf_counter()
            resp = await self.client.chat.completions.create(**kw)
        choice = resp.choices[0]
        text = render_tool_calls(choice.message.content, choice.message.tool_calls)
        usage = resp.usage
        return Generation(text, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
                          choice.finish_reason or "", time.perf_counter() - t)

    async def aclose(self) -> None:
        await self.client.close()
