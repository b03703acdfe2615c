"""Per-step throughput (tokens/s, TFLOP/s with attention FLOPs), peak memory, and ``metrics.jsonl`` on rank 0."""

from __future__ import annotations

import json
import resource
import signal
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from calcmate.io import JsonlAppender, atomic_write_text
from calcmate.training.arch import Arch


class ThroughputMeter:
    """Accumulates this rank's real tokens and model FLOPs between two log calls.

    Under Ulysses SP each rank holds a 1/sp shard of a sequence of length ``shard_len * sp``; its share of the
    sequence's FLOPs is 1/sp. The reported figures are per GPU (this rank), as the issue asks.
    """

    def __init__(self, arch: Arch, sp_size: int):
        self.arch, self.sp = arch, sp_size
        self.tokens = 0
        self.flops = 0.0
        self.t0 = time.perf_counter()

    def add_batch(self, inputs: dict[str, Any]) -> None:
        """Dense FLOPs on this rank's real tokens; causal attention on the (padded) full sequence, 1/sp of it."""
        ids = inputs["input_ids"]
        batch, shard = ids.shape[0], ids.shape[1]
        mask = inputs.get("attention_mask")
        real = int(mask.sum()) if mask is not None else batch * shard
        seq = shard * self.sp
        a = self.arch
        self.tokens += real
        self.flops += 6.0 * a.matmul_params_per_token() * real
        self.flops += 6.0 * a.num_hidden_layers * seq**2 * a.num_attention_heads * a.head_dim * batch / self.sp

    def read_and_reset(self) -> dict[str, float]:
        now = time.perf_counter()
        dt = max(now - self.t0, 1e-9)
        out = {"tokens_per_s": self.tokens / dt, "tflops_per_gpu": self.flops / dt / 1e12, "peak_mem_gb": peak_memory_gb()}
        self.tokens, self.flops, self.t0 = 0, 0.0, now
        return out


def peak_memory_gb() -> float:
    """Peak accelerator memory on GPU; peak resident set size on CPU."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.max_memory_allocated() / 1e9
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


class MetricsJsonl(TrainerCallback):
    """One JSON line per logged training step in ``<output_dir>/metrics.jsonl`` (rank 0 only).

    On resume, lines after the checkpoint's step (written by the interrupted run) are dropped first, so the file
    is one clean loss curve.
    """

    def __init__(self, output_dir: str | Path):
        self.path = Path(output_dir) / "metrics.jsonl"

    def on_train_begin(self, args, state, control, **kw):
        if state.is_world_process_zero and self.path.exists():
            keep = [ln for ln in self.path.read_text().splitlines() if ln.strip() and json.loads(ln)["step"] <= state.global_step]
            atomic_write_text(self.path, "".join(ln + "\n" for ln in keep))

    def on_log(self, args, state, control, logs=None, **kw):
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        rec = {"step": state.global_step, "loss": logs["loss"], "lr": logs.get("learning_rate"),
               "tokens_per_s": logs.get("tokens_per_s"), "tflops_per_gpu": logs.get("tflops_per_gpu"),
               "peak_mem_gb": logs.get("peak_mem_gb"), "grad_norm": logs.get("grad_norm"), "epoch": logs.get("epoch"),
               "num_tokens": logs.get("num_tokens"), "mean_token_accuracy": logs.get("mean_token_accuracy"),
               "time": time.time()}
        with JsonlAppender(self.path, key="step") as f:
            f.append(rec)


class StopControl(TrainerCallback):
    """Stop cleanly with a checkpoint: at ``stop_at_step``, or on SIGUSR1 (SLURM's pre-timeout signal).

    The schedule still follows ``max_steps``/epochs, so a resumed run continues the same curve.
    """

    def __init__(self, stop_at_step: int | None = None, handle_sigusr1: bool = True):
        self.stop_at_step = stop_at_step
        self.signalled = False
        if handle_sigusr1:
            try:
                signal.signal(signal.SIGUSR1, self._on_signal)
            except ValueError:  # not the main thread
                pass

    def _on_signal(self, *_):
        self.signalled = True

    def on_step_end(self, args, state, control, **kw):
        if self.signalled or (self.stop_at_step is not None and state.global_step >= self.stop_at_step):
            control.should_save = True
            control.should_training_stop = True
        return control
