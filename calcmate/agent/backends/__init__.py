"""Model backends behind one interface (``Backend.chat``): vLLM offline, OpenAI-compatible HTTP,
transformers. Heavy imports (vllm, torch) happen only when a backend is built."""

from __future__ import annotations

from calcmate.agent.backends.base import Backend, BackendConfig, Generation, Sampling, make_backend

__all__ = ["Backend", "BackendConfig", "Generation", "Sampling", "make_backend"]
