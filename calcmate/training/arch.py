"""Model shape numbers for config checks and the --dry-run estimate, read from config.json (no torch).

The two paper models are also listed here (from their public config.json files), so the checks and the
estimate work on a machine that has not downloaded them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Arch:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    num_experts: int = 0  # 0: dense
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def _attn_params(self) -> int:
        h, d = self.hidden_size, self.head_dim
        return h * d * (self.num_attention_heads * 2 + self.num_key_value_heads * 2) + 2 * d  # q,k,v,o + q/k norms

    def _mlp_params(self, active: bool) -> int:
        if not self.is_moe:
            return 3 * self.hidden_size * self.intermediate_size
        n = self.num_experts_per_tok if active else self.num_experts
        return n * 3 * self.hidden_size * self.moe_intermediate_size + self.hidden_size * self.num_experts

    def params(self, active: bool = False) -> int:
        """Total parameters (``active=True``: those one token uses; embeddings included once if tied)."""
        per_layer = self._attn_params() + self._mlp_params(active) + 2 * self.hidden_size
        emb = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        return self.num_hidden_layers * per_layer + emb + self.hidden_size

    def matmul_params_per_token(self) -> int:
        """Weights multiplied per token in a forward (includes the LM head, excludes the embedding lookup)."""
        return self.num_hidden_layers * (self._attn_params() + self._mlp_params(True)) + self.vocab_size * self.hidden_size


KNOWN: dict[str, Arch] = {
    "Qwen/Qwen3-4B-Instruct-2507": Arch(
        hidden_size=2560, num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        intermediate_size=9728, vocab_size=151936, tie_word_embeddings=True),
    "Qwen/Qwen3-30B-A3B-Instruct-2507": Arch(
        hidden_size=2048, num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
        intermediate_size=6144, vocab_size=151936, tie_word_embeddings=False, num_experts=128,
        num_experts_per_tok=8, moe_intermediate_size=768),
}


def arch_from_config(cfg: dict[str, Any]) -> Arch:
    heads = cfg["num_attention_heads"]
    return Arch(
        hidden_size=cfg["hidden_size"], num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=heads,
        num_key_value_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        intermediate_size=cfg.get("intermediate_size", 0), vocab_size=cfg["vocab_size"],
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        num_experts=cfg.get("num_experts") or 0, num_experts_per_tok=cfg.get("num_experts_per_tok") or 0,
        moe_intermediate_size=cfg.get("moe_intermediate_size") or 0,
    )


def arch_for(name: str, cfg: dict[str, Any] | None) -> Arch | None:
    if cfg is not None:
        return arch_from_config(cfg)
    return KNOWN.get(name)
