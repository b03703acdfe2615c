"""CPU-ONLY workarounds for running ZeRO-3 + Ulysses SP on gloo (tests and the quickstart).

Each shim is a no-op unless the run is on CPU (``use_cpu: true``); GPU runs never go through here.
See the "Long-context SFT" section of docs/field-notes (accelerate 1.15 / deepspeed 0.19.8).
"""

from __future__ import annotations

import os


def on_cpu(use_cpu: bool) -> bool:
    return bool(use_cpu)


def fix_partial_state_for_gloo(use_cpu: bool) -> None:
    """CPU-ONLY shim 1: accelerate's ``PartialState`` treats DeepSpeed on CPU as non-distributed.

    After the SFTConfig (which initializes the gloo process group) is built, tell the shared state the truth
    so the Accelerator shards data and reduces across ranks. Accelerate then also skips
    ``deepspeed.init_distributed``, which ``zero.Init`` needs to see the real world size, so we call it here.
    """
    if not on_cpu(use_cpu) or "WORLD_SIZE" not in os.environ:
        return
    import deepspeed
    from accelerate.state import PartialState

    # No JIT-built shared-memory all-reduce on CPU: gloo does the collectives. Building it needs a compiler
    # at run time, and a run interrupted mid-build leaves torch's FileBaton lock behind, on which every
    # later run waits forever.
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    deepspeed.init_distributed(dist_backend="gloo")

    PartialState._shared_state.update(
        backend="gloo",
        num_processes=int(os.environ["WORLD_SIZE"]),
        process_index=int(os.environ.get("RANK", 0)),
        local_process_index=int(os.environ.get("LOCAL_RANK", 0)),
    )


def equal_length_padding(use_cpu: bool, pad_to_length: int | str | None, pad_to_multiple_of: int,
                         longest: int | None = None) -> int:
    """CPU-ONLY shim 2: gloo ``all_gather`` needs equal tensor sizes across ranks.

    Returns the collator's ``pad_to_multiple_of``: on CPU with ``pad_to_length`` set, every batch is padded to that
    one length (all samples are at most ``max_length <= pad_to_length``); ``"auto"`` uses the longest kept sample
    (``longest``, the same on every rank) rounded up to a multiple of 64 x sp. Otherwise the normal multiple (sp).
    """
    if not on_cpu(use_cpu) or not pad_to_length:
        return pad_to_multiple_of
    if pad_to_length == "auto":
        if longest is None:  # not known yet (before data prep): set again once it is
            return pad_to_multiple_of
        step = 64 * pad_to_multiple_of
        return -(-longest // step) * step
    return int(pad_to_length)
