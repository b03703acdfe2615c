"""What a run saves beside its model: resolved config, git commit, package versions, dataset fingerprint."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from calcmate.io import atomic_write_json

PACKAGES = ("calcmate", "torch", "transformers", "trl", "accelerate", "deepspeed", "datasets", "tokenizers",
            "flash-attn", "pydantic", "numpy")


def git_info(repo: str | Path | None = None) -> dict[str, Any]:
    cwd = str(repo or Path(__file__).resolve().parents[2])
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in PACKAGES:
        try:
            out[p] = importlib_metadata.version(p)
        except importlib_metadata.PackageNotFoundError:
            out[p] = None
    out["python"] = sys.version.split()[0]
    out["platform"] = platform.platform()
    return out


def write_run_metadata(out_dir: str | Path, *, config: dict[str, Any], dataset: dict[str, Any],
                       data_stats: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> Path:
    """Write ``calcmate_run.json`` into ``out_dir`` (the final model dir, and each run's output dir)."""
    path = Path(out_dir) / "calcmate_run.json"
    atomic_write_json(path, {"config": config, "git": git_info(), "packages": package_versions(),
                             "dataset": dataset, "data_stats": data_stats, **(extra or {})})
    return path
