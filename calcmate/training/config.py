"""The SFT run config: validated with pydantic before torch, a process group or a GPU is touched.

Keys follow TRL/transformers argument names where one exists (``learning_rate``, ``max_length``,
``per_device_train_batch_size``, ``gradient_accumulation_steps``, ``warmup_steps``, ``save_steps``, ...).
This module imports only pydantic/json so that a bad config fails in well under a second, naming the field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from calcmate.training.arch import Arch, arch_for

AttnImpl = Literal["flash_attention_2", "flash_attention_3", "sdpa", "eager"]


def _plan_only(info: ValidationInfo) -> bool:
    """True under ``--dry-run``: the run is only planned, so model weights and data need not be reachable."""
    return bool(info.context and info.context.get("plan_only"))


class SFTRunConfig(BaseModel):
    """One SFT run. ``extra='forbid'``: a misspelt key is an error that names it."""

    model_config = ConfigDict(extra="forbid")

    # what to train, on what, where to write
    model_name_or_path: str = Field(description="local HF model dir or hub id (hub ids must be in the HF cache)")
    tokenizer_name_or_path: str | None = None
    chat_template_path: str | None = Field(None, description="template with {% generation %} markers, if not stock")
    dataset_path: str = Field(description=".jsonl/.parquet file, a directory of them, or a save_to_disk dir")
    output_dir: str
    run_name: str | None = None

    # schedule (paper: 1 epoch, lr 1e-5, cosine, warmup 0.1, batch 1 x accumulation 8)
    num_train_epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, ge=-1)
    learning_rate: float = Field(1e-5, gt=0, lt=1)
    lr_scheduler_type: Literal["cosine", "linear", "constant", "constant_with_warmup", "cosine_with_min_lr"] = "cosine"
    warmup_steps: float = Field(0.1, ge=0, description="a float below 1 is a ratio of total steps (transformers 5)")
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    per_device_train_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(8, ge=1)
    seed: int = 42

    # sequences
    max_length: int = Field(150_000, ge=16)
    overlong_policy: Literal["truncate", "drop"] = Field(
        "truncate", description="over-long samples: keep the first max_length tokens, or drop; counted either way")
    assistant_only_loss: bool = True
    packing: bool = False
    padding_free: bool = False
    pad_to_multiple_of: int | None = Field(None, ge=1, description="default: sp_size (Ulysses shards evenly)")
    pad_to_length: int | Literal["auto"] | None = Field(
        None, description="CPU/gloo shim: pad every batch to one length (gloo all_gather needs equal sizes); "
                          "'auto': the longest kept sample, rounded up to a multiple of 64 * sp_size")
    dataset_num_proc: int | None = Field(None, ge=1)

    # model + parallelism
    bf16: bool = True
    attn_implementation: AttnImpl = "flash_attention_2"
    experts_implementation: Literal["grouped_mm", "batched_mm", "eager"] | None = None
    router_aux_loss_coef: float | None = Field(
        None, ge=0, description="MoE load-balancing loss weight (None: the model's; under SP it is computed per shard)")
    activation_checkpointing: bool = True
    sp_size: int = Field(1, ge=1, description="Ulysses sequence-parallel degree (DeepSpeed ALST)")
    deepspeed: str = Field(description="DeepSpeed JSON (ZeRO-3)")
    use_cpu: bool = Field(False, description="run on CPU with gloo (tests and the quickstart)")

    # checkpoints + logging
    save_steps: int = Field(100, ge=1)
    save_total_limit: int | None = Field(None, ge=1)
    logging_steps: int = Field(1, ge=1)
    report_to: Literal["wandb", "none"] = "wandb"
    wandb_project: str = "calcmate"
    wandb_mode: Literal["offline", "online", "disabled"] = "offline"

    # --dry-run estimate
    dry_run_world_size: int | None = Field(None, ge=1, description="GPUs to plan for when not launched by torchrun")
    gpu_memory_gb: float = Field(80.0, gt=0)
    gpu_peak_tflops: float = Field(989.0, gt=0, description="dense bf16 peak per GPU (H100 SXM: 989)")
    assumed_mfu: float = Field(0.30, gt=0, le=1)

    @field_validator("model_name_or_path")
    @classmethod
    def _model_reachable(cls, v: str, info: ValidationInfo) -> str:
        p = Path(v).expanduser()
        if p.exists():
            if not (p / "config.json").is_file():
                raise ValueError(f"{v!r} exists but has no config.json (not a Hugging Face model dir)")
            return str(p)
        if v.startswith((".", "/", "~")) or v.count("/") != 1:
            raise ValueError(f"model path {v!r} does not exist (and is not a hub id 'org/name')")
        if _plan_only(info):  # --dry-run plans from the known architecture; the weights need not be here
            return v
        if _hub_config(v) is None and os.environ.get("HF_HUB_OFFLINE", "0") == "1":
            raise ValueError(f"hub model {v!r} is not in the local HF cache and HF_HUB_OFFLINE=1")
        return v

    @field_validator("dataset_path", "deepspeed", "chat_template_path")
    @classmethod
    def _path_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        if info.field_name == "dataset_path" and _plan_only(info):
            return v
        if v is not None and not Path(v).expanduser().exists():
            raise ValueError(f"{info.field_name} {v!r} does not exist")
        return v

    @field_validator("deepspeed")
    @classmethod
    def _zero3(cls, v: str) -> str:
        try:
            ds = json.loads(Path(v).read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{v!r} is not valid JSON: {e}") from None
        stage = ds.get("zero_optimization", {}).get("stage")
        if stage != 3:
            raise ValueError(f"{v!r} must configure ZeRO stage 3 (zero_optimization.stage is {stage!r})")
        return v

    @model_validator(mode="after")
    def _parallelism(self) -> "SFTRunConfig":
        sp = self.sp_size
        world = self.world_size()
        if world is not None and world % sp:
            raise ValueError(f"sp_size: {sp} does not divide the world size {world}")
        arch = self.arch()
        if arch is not None:
            if arch.num_attention_heads % sp:
                raise ValueError(f"sp_size: {sp} does not divide the model's {arch.num_attention_heads} attention heads")
            kv = arch.num_key_value_heads
            if kv % sp and sp % kv:
                raise ValueError(f"sp_size: KV-head rule: with {kv} KV heads, sp_size must divide {kv} or be a "
                                 f"multiple of it (got {sp})")
        if sp > 1 and self.packing:
            raise ValueError("packing: refused under sequence parallelism (sp_size > 1): the packed collator's 1-D "
                             "cu_seq_lens crash DeepSpeed's UlyssesSPDataLoaderAdapter (deepspeed 0.19.8), and "
                             "Ulysses shards one sequence, so set packing=false")
        if sp > 1 and self.padding_free:
            raise ValueError("padding_free: refused under sequence parallelism for the same reason as packing")
        if sp > 1 and self.attn_implementation == "eager":
            raise ValueError("attn_implementation: 'eager' is rejected by Ulysses SP; use flash_attention_2 or sdpa")
        if self.pad_to_multiple_of is not None and self.pad_to_multiple_of % sp:
            raise ValueError(f"pad_to_multiple_of: {self.pad_to_multiple_of} must be a multiple of sp_size={sp}")
        if isinstance(self.pad_to_length, int):
            if self.pad_to_length < 1:
                raise ValueError("pad_to_length: must be positive")
            if self.pad_to_length % sp:
                raise ValueError(f"pad_to_length: {self.pad_to_length} must be a multiple of sp_size={sp}")
            if self.pad_to_length < self.max_length:
                raise ValueError(f"pad_to_length: {self.pad_to_length} is below max_length={self.max_length}")
        if self.use_cpu and self.bf16:
            raise ValueError("bf16: set bf16=false with use_cpu=true (CPU runs in fp32)")
        if self.use_cpu and self.attn_implementation.startswith("flash"):
            raise ValueError("attn_implementation: FlashAttention needs a GPU; use sdpa with use_cpu=true")
        return self

    # ---------------------------------------------------------------- derived values (no torch needed)

    def world_size(self) -> int | None:
        """torchrun's WORLD_SIZE when launched, else the planned GPU count for --dry-run."""
        env = os.environ.get("WORLD_SIZE")
        return int(env) if env else self.dry_run_world_size

    def arch(self) -> Arch | None:
        p = Path(self.model_name_or_path)
        cfg = json.loads((p / "config.json").read_text()) if (p / "config.json").is_file() else _hub_config(
            self.model_name_or_path)
        return arch_for(self.model_name_or_path, cfg)

    def effective_pad_multiple(self) -> int:
        return self.pad_to_multiple_of or self.sp_size


def _hub_config(repo_id: str) -> dict[str, Any] | None:
    """config.json from the local HF cache, if there; never touches the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return None
    path = try_to_load_from_cache(repo_id, "config.json")
    return json.loads(Path(path).read_text()) if isinstance(path, str) else None
