"""transformers ``generate`` on CPU (tests, tiny models) or a single GPU; one call at a time,
run in a worker thread so tool calls of other episodes keep going."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from calcmate.agent.backends.base import Backend, BackendConfig, Generation, Sampling


class TransformersBackend(Backend):
    def __init__(self, cfg: BackendConfig):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.cfg, self.model_name = cfg, str(cfg.model)
        self.tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        dtype = getattr(torch, cfg.dtype) if cfg.dtype not in ("auto", None) else "auto"
        self.model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=dtype)
        self.model.eval()
        self._lock = asyncio.Lock()
        self._stop_strings = [t for t in ("<|im_end|>", "<|endoftext|>", self.tokenizer.eos_token) if t]

    def _generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, s: dict[str, Any]) -> Generation:
        import torch

        kw: dict[str, Any] = {}
        if self.cfg.enable_thinking is not None:
            kw["enable_thinking"] = self.cfg.enable_thinking
        prompt = self.tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False, **kw)
        enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        gen_kw: dict[str, Any] = {}
        if "max_tokens" in s:
            gen_kw["max_new_tokens"] = s["max_tokens"]
        elif not getattr(self.model.generation_config, "max_new_tokens", None):
            gen_kw["max_new_tokens"] = 1024
        if "temperature" in s:
            gen_kw["do_sample"] = s["temperature"] > 0
            if s["temperature"] > 0:
                gen_kw["temperature"] = s["temperature"]
        for k in ("top_p", "top_k", "repetition_penalty"):
            if k in s:
                gen_kw[k] = s[k]
        if "seed" in s:
            torch.manual_seed(s["seed"])
        t = time.perf_counter()
        with torch.no_grad():
            out = self.model.generate(**enc, **gen_kw, pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
        new = out[0, enc["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=False)
        finish = "length"
        for stop in self._stop_strings:
            if stop in text:
                text, finish = text.split(stop, 1)[0], "stop"
        if self.tokenizer.pad_token:
            text = text.replace(self.tokenizer.pad_token, "")
        return Generation(text, int(enc["input_ids"].shape[1]), int(new.shape[0]), finish, time.perf_counter() - t)

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                   sampling: Sampling | None = None) -> Generation:
        s = {**self.cfg.sampling.given(), **(sampling.given() if sampling else {})}
        async with self._lock:
            return await asyncio.to_thread(self._generate, messages, tools, s)
