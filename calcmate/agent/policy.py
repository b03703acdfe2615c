"""Policies decide the next turn of an episode: a model (backend + protocol) or a script.

A policy returns a ``Turn``: either raw text for the protocol to parse (models) or a ready
``Action`` (scripted policies such as the oracle), so one Episode loop serves both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calcmate.agent.protocols import Action

if TYPE_CHECKING:
    from calcmate.agent.backends.base import Backend, Sampling
    from calcmate.agent.episode import EpisodeState


@dataclass
class Turn:
    text: str | None = None
    action: Action | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    name: str = "policy"

    async def start(self, state: "EpisodeState") -> None:
        """Called once before the first turn (scripted policies plan here)."""

    @abstractmethod
    async def act(self, state: "EpisodeState") -> Turn: ...


class ModelPolicy(Policy):
    """A model behind any backend; the protocol renders the prompt and parses the reply."""

    def __init__(self, backend: "Backend", sampling: "Sampling | None" = None, name: str | None = None):
        self.backend, self.sampling = backend, sampling
        self.name = f"model:{name or backend.model_name}"

    async def act(self, state: "EpisodeState") -> Turn:
        messages, tools = state.protocol.render(state.trajectory.messages, state.tools, state.max_rounds)
        gen = await self.backend.chat(messages, tools=tools, sampling=self.sampling)
        return Turn(text=gen.text, prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens,
                    latency_s=gen.latency_s, meta={"finish_reason": gen.finish_reason})
