"""Wire a validated :class:`SFTRunConfig` into TRL's SFTTrainer + accelerate ParallelismConfig + DeepSpeed ZeRO-3.

Order matters: the ``SFTConfig`` (with ``deepspeed=``) is built *before* the model is loaded and the model is
passed to the trainer as a path string, so ZeRO-3's ``zero.Init`` shards the weights at load (DeepSpeed#7458).
Under SP the trainer calls the model with TRL's fused LM head and scores in tiles (S x V logits never exist).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from calcmate.training.config import SFTRunConfig

log = logging.getLogger("calcmate.training")


def build_sft_config(cfg: SFTRunConfig):
    """The TRL ``SFTConfig``; constructing it initializes the process group (nccl, or gloo on CPU)."""
    import torch
    from accelerate.parallelism_config import ParallelismConfig
    from accelerate.utils import DeepSpeedSequenceParallelConfig
    from trl import SFTConfig

    from calcmate.training.cpu_shims import equal_length_padding, fix_partial_state_for_gloo

    parallelism = None
    if cfg.sp_size > 1:
        parallelism = ParallelismConfig(
            sp_backend="deepspeed", sp_size=cfg.sp_size, dp_shard_size=1,
            sp_handler=DeepSpeedSequenceParallelConfig(
                sp_seq_length_is_variable=True, sp_attn_implementation=cfg.attn_implementation),
        )
    report_to = [] if cfg.report_to == "none" else [cfg.report_to]
    if cfg.report_to == "wandb":
        import importlib.util

        if importlib.util.find_spec("wandb") is None:  # wandb is optional (pip install -e .[wandb])
            log.warning("report_to: wandb is not installed; logging to metrics.jsonl only (pip install wandb)")
            report_to = []
    model_init_kwargs: dict[str, Any] = {
        "dtype": torch.bfloat16 if cfg.bf16 else torch.float32,
        "attn_implementation": cfg.attn_implementation,
    }
    if cfg.experts_implementation:
        model_init_kwargs["experts_implementation"] = cfg.experts_implementation
    sft = SFTConfig(
        output_dir=cfg.output_dir, run_name=cfg.run_name, seed=cfg.seed, data_seed=cfg.seed,
        num_train_epochs=cfg.num_train_epochs, max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        # data is tokenized, masked and length-checked by calcmate.training.data; TRL uses it as is
        max_length=cfg.max_length, assistant_only_loss=False, packing=cfg.packing, padding_free=cfg.padding_free,
        pad_to_multiple_of=equal_length_padding(cfg.use_cpu, cfg.pad_to_length, cfg.effective_pad_multiple()),
        router_aux_loss_coef=cfg.router_aux_loss_coef,
        bf16=cfg.bf16, gradient_checkpointing=cfg.activation_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if cfg.activation_checkpointing else None,
        deepspeed=cfg.deepspeed, parallelism_config=parallelism, model_init_kwargs=model_init_kwargs,
        save_strategy="steps", save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
        logging_steps=cfg.logging_steps, logging_first_step=True,
        report_to=report_to,
        use_cpu=cfg.use_cpu, ddp_backend="gloo" if cfg.use_cpu else None,
        dataloader_num_workers=0, remove_unused_columns=True, disable_tqdm=False,
    )
    fix_partial_state_for_gloo(cfg.use_cpu)  # CPU-ONLY shim; no-op on GPU
    return sft


def load_tokenizer(cfg: SFTRunConfig):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(cfg.tokenizer_name_or_path or cfg.model_name_or_path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def sp_aware_skip_first_batches(dataloader, num_batches: int = 0):
    """Resume under Ulysses SP: ``accelerate.skip_first_batches`` fails on DeepSpeed's
    ``UlyssesSPDataLoaderAdapter`` (it has no ``.dataset``; transformers 5.23 / accelerate 1.15 / deepspeed
    0.19.8). The adapter is its own iterator, so consuming ``num_batches`` from it skips exactly the micro-batches
    already trained, in the same seeded order (only data moves; the model is not run).
    """
    from accelerate import skip_first_batches
    from deepspeed.runtime.sequence_parallel.ulysses_sp import UlyssesSPDataLoaderAdapter

    if not isinstance(dataloader, UlyssesSPDataLoaderAdapter):
        return skip_first_batches(dataloader, num_batches)
    for _ in range(num_batches):
        next(dataloader)
    return dataloader


def make_trainer_class():
    """SFTTrainer plus per-step throughput: counts each micro-batch's tokens/FLOPs, adds them to every log."""
    from trl import SFTTrainer

    class CalcMateSFTTrainer(SFTTrainer):
        meter = None

        def training_step(self, model, inputs, *args, **kwargs):
            if self.meter is not None:
                self.meter.add_batch(inputs)
            return super().training_step(model, inputs, *args, **kwargs)

        def _run_epoch(self, *args, **kwargs):
            import transformers.trainer as hf_trainer

            original = hf_trainer.skip_first_batches
            hf_trainer.skip_first_batches = sp_aware_skip_first_batches
            try:
                return super()._run_epoch(*args, **kwargs)
            finally:
                hf_trainer.skip_first_batches = original

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if self.meter is not None and "loss" in logs:
                logs.update(self.meter.read_and_reset())
            super().log(logs, start_time)

    return CalcMateSFTTrainer


def last_checkpoint(output_dir: str | Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if Path(output_dir).is_dir() else None
