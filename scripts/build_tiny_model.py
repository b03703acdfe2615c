"""Build a tiny Qwen3 (or Qwen3-MoE) and a BPE tokenizer locally, for CPU tests and the quickstart.

  python scripts/build_tiny_model.py --out runs/tiny-qwen3 [--kind moe]

Nothing is downloaded. The tokenizer carries TRL's stock qwen3_instruct_2507.jinja template, so TRL swaps in its
{% generation %} training template exactly as for the real Qwen3-4B-Instruct-2507.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="output model directory")
    p.add_argument("--kind", choices=["dense", "moe"], default="dense", help="Qwen3 (dense) or Qwen3-MoE")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    from calcmate.training.tiny import build_tiny

    out = build_tiny(args.out, args.kind, seed=args.seed)
    print(f"tiny {args.kind} Qwen3 written to {out}")


if __name__ == "__main__":
    main()
