"""Build a tiny Qwen3 (or Qwen3-MoE) and a BPE tokenizer locally, for CPU tests and the quickstart.

  python scripts/build_tiny_model.py --out runs/tiny-qwen3 [--kind moe] [--seed 1]
  python scripts/build_tiny_model.py --config tiny.yaml --set kind=moe --out runs/tiny-moe

Nothing is downloaded. The tokenizer carries TRL's stock qwen3_instruct_2507.jinja template, so TRL swaps in its
{% generation %} training template exactly as for the real Qwen3-4B-Instruct-2507.
A config (optional) holds the same keys as the flags: out, kind, seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402


class TinyModelConfig(BaseModel):
    out: Path | None = None
    kind: Literal["dense", "moe"] = "dense"
    seed: int = 0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p, out=False)
    p.add_argument("--out", type=Path, help="output model directory (required here or in the config)")
    p.add_argument("--kind", choices=["dense", "moe"], help="Qwen3 (dense, the default) or Qwen3-MoE")
    p.add_argument("--seed", type=int, help="weight-initialisation seed (default 0)")
    args = p.parse_args(argv)
    overrides = flat_overrides(args) + [f"{k}={getattr(args, k)}" for k in ("out", "kind", "seed")
                                        if getattr(args, k) is not None]
    try:
        cfg = load_config(args.config, overrides, TinyModelConfig)
    except ConfigError as e:
        exit_on_config_error(e)
    if cfg.out is None:
        exit_on_config_error(ConfigError("--out: an output model directory is required"))
    from calcmate.training.tiny import build_tiny

    out = build_tiny(cfg.out, cfg.kind, seed=cfg.seed)
    print(f"tiny {cfg.kind} Qwen3 written to {out}")


if __name__ == "__main__":
    main()
