"""Long-context SFT of a tool-calling agent: TRL SFTTrainer + DeepSpeed ZeRO-3 + Ulysses sequence parallelism.

  torchrun --nproc_per_node 8 train/sft.py --config configs/calcmate-4b.yaml [--set key=value ...] [--resume]
  python train/sft.py --config configs/calcmate-4b.yaml --dry-run      # memory / step-time estimate, then exit

The config is validated (pydantic, no torch import) before any process group or GPU is touched.
Writes to output_dir: checkpoint-N/ every save_steps, metrics.jsonl, data_stats.json, calcmate_run.json, and
the final Hugging Face model (ZeRO-3 16-bit gather) at the top level, loadable by transformers and vLLM.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402
from calcmate.io import atomic_write_json  # noqa: E402
from calcmate.training.config import SFTRunConfig  # noqa: E402

log = logging.getLogger("calcmate.sft")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p, out=True, config_required=True)
    p.add_argument("--resume", action="store_true",
                   help="continue from the last checkpoint-N in output_dir (same data order); starts fresh if none")
    p.add_argument("--dry-run", action="store_true", help="print the resolved config and a per-GPU estimate, then exit")
    p.add_argument("--stop-at-step", type=int, default=None,
                   help="save a checkpoint and stop after this optimizer step, keeping the full run's schedule")
    return p.parse_args(argv)


def load(args: argparse.Namespace) -> SFTRunConfig:
    overrides = flat_overrides(args)
    if args.out:
        overrides.append(f"output_dir={args.out}")
    # A dry run only plans: it validates everything but does not need the weights or the dataset yet.
    return load_config(args.config, overrides, SFTRunConfig, context={"plan_only": bool(args.dry_run)})


def dry_run(cfg: SFTRunConfig) -> None:
    import yaml

    from calcmate.training.estimate import estimate

    print("# resolved config")
    print(yaml.safe_dump(cfg.model_dump(), sort_keys=False).rstrip())
    arch = cfg.arch()
    if arch is None:
        print(f"\nno estimate: the shape of {cfg.model_name_or_path!r} is unknown offline")
        return
    world = cfg.world_size() or 1
    est = estimate(arch, world_size=world, sp_size=cfg.sp_size, seq_len=cfg.max_length,
                   micro_batch=cfg.per_device_train_batch_size, grad_accum=cfg.gradient_accumulation_steps,
                   gpu_memory_gb=cfg.gpu_memory_gb, gpu_peak_tflops=cfg.gpu_peak_tflops, assumed_mfu=cfg.assumed_mfu,
                   activation_checkpointing=cfg.activation_checkpointing)
    print()
    print(est.render(Path(cfg.model_name_or_path).name))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = load(args)
    except ConfigError as e:
        exit_on_config_error(e)
    if args.dry_run:
        dry_run(cfg)
        return 0
    return train(cfg, resume=args.resume, stop_at_step=args.stop_at_step)


def train(cfg: SFTRunConfig, *, resume: bool, stop_at_step: int | None) -> int:
    os.environ.setdefault("WANDB_MODE", cfg.wandb_mode)
    os.environ.setdefault("WANDB_PROJECT", cfg.wandb_project)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] [rank %(rank)s] %(message)s")
    rank = int(os.environ.get("RANK", 0))
    old = logging.getLogRecordFactory()

    def factory(*a, **k):
        rec = old(*a, **k)
        rec.rank = rank
        return rec

    logging.setLogRecordFactory(factory)

    from accelerate import PartialState

    from calcmate.training.data import (TemplateMaskError, check_assistant_mask, encode_dataset, fingerprint,
                                        load_rows, resolve_training_template)
    from calcmate.training.metadata import write_run_metadata
    from calcmate.training.metrics import MetricsJsonl, StopControl, ThroughputMeter
    from calcmate.training.trainer import build_sft_config, last_checkpoint, load_tokenizer, make_trainer_class

    log.info("config ok; initializing the process group")
    sft_args = build_sft_config(cfg)  # before the model: ZeRO-3 zero.Init shards at load
    state = PartialState()
    log.info("process group ready: world %d, sp %d", state.num_processes, cfg.sp_size)
    tok = load_tokenizer(cfg)
    try:
        template = resolve_training_template(tok, cfg.chat_template_path)
        probe_fraction = check_assistant_mask(tok, template)
    except TemplateMaskError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with state.main_process_first():
        rows = load_rows(cfg.dataset_path)
        ds, stats = encode_dataset(rows, tok, template, max_length=cfg.max_length, overlong=cfg.overlong_policy,
                                   num_proc=cfg.dataset_num_proc)
    log.info("data: %s", stats.summary())
    if stats.kept == 0:
        print(f"error: dataset_path: no trainable rows left ({stats.summary()})", file=sys.stderr)
        return 2
    from calcmate.training.cpu_shims import equal_length_padding

    sft_args.pad_to_multiple_of = equal_length_padding(  # CPU-only: one padded length on every rank
        cfg.use_cpu, cfg.pad_to_length, cfg.effective_pad_multiple(), longest=stats.length_max)
    data_fp = fingerprint(cfg.dataset_path)
    meta = dict(config=cfg.model_dump(), dataset=data_fp, data_stats=stats.to_dict(),
                extra={"probe_trained_fraction": probe_fraction, "world_size": state.num_processes})
    if state.is_main_process:
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "data_stats.json", stats.to_dict())
        write_run_metadata(out, **meta)

    stopper = StopControl(stop_at_step)
    trainer = make_trainer_class()(
        model=cfg.model_name_or_path, args=sft_args, train_dataset=ds, processing_class=tok,
        callbacks=[MetricsJsonl(cfg.output_dir), stopper],
    )
    trainer.meter = ThroughputMeter(cfg.arch(), cfg.sp_size)
    trainer.log({"trained_token_fraction": stats.trained_fraction, "truncated_samples": stats.truncated,
                 "dropped_samples": stats.dropped_overlong + stats.dropped_no_trained})

    ckpt = last_checkpoint(cfg.output_dir) if resume else None
    if resume:
        log.info("resume: %s", ckpt or "no checkpoint found, starting from scratch")
    trainer.train(resume_from_checkpoint=ckpt)

    if trainer.state.global_step < trainer.state.max_steps and (stopper.signalled or stop_at_step is not None):
        log.info("stopped at step %d with a checkpoint; rerun with --resume", trainer.state.global_step)
        return 0
    trainer.save_model(cfg.output_dir)  # ZeRO-3: 16-bit gathered weights (stage3_gather_16bit_weights_on_model_save)
    if state.is_main_process:
        write_run_metadata(cfg.output_dir, **meta)
        log.info("final model saved to %s", cfg.output_dir)
    state.wait_for_everyone()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
