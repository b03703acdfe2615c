"""Per-GPU memory and step-time estimate for ``--dry-run``, and the FLOP counts the metrics use.

Memory (bytes per GPU, bf16 compute, ZeRO-3 over all W ranks, Ulysses SP over ``sp`` ranks):
  * model states: 16 bytes/param (bf16 weights + bf16 grads + fp32 master + Adam m, v) / W;
  * checkpointed activations: one bf16 hidden state per layer for this rank's S/sp tokens;
  * one layer's working set while it is recomputed and back-propagated (attention runs on the full sequence
    for heads/sp after the all-to-all; MLP/MoE on S/sp tokens), ~2x the forward intermediates;
  * ZeRO-3 gathered parameters (the live layer plus a prefetched one, and the embedding/LM head);
  * loss tiles of TRL's fused LM head (4,096 tokens x 32,768 vocab, fp32), so S x V logits never exist;
  * a fixed allowance for the CUDA context, NCCL buffers and allocator fragmentation.
FLOPs: model FLOPs = 6 x (matmul params per token) x tokens + causal attention 6 x L x S^2 x heads x head_dim
(forward QK^T and AV, halved by the causal mask, x3 for backward); activation recompute is not counted (MFU
convention), so the step time is the ideal time at the assumed MFU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from calcmate.training.arch import Arch

GB = 1e9
LOSS_TILE_TOKENS, LOSS_TILE_VOCAB = 4096, 32768
FIXED_OVERHEAD_GB = 3.0  # CUDA context + NCCL + fragmentation allowance
# HF ALST blog: Qwen3-4B, TRL, ZeRO-3, SP=4 on 4xH100 at 64k measured 50.5 GB/GPU. Our analytic total for that
# setup is a floor (no allocator caching or temporaries); the ratio is reported as a calibrated upper reading.
ALST_ANCHOR_GB = 50.5


def model_flops(arch: Arch, seq_len: int) -> float:
    """Training FLOPs (fwd+bwd) for one sequence of ``seq_len`` tokens, attention included."""
    dense = 6.0 * arch.matmul_params_per_token() * seq_len
    attn = 6.0 * arch.num_hidden_layers * seq_len**2 * arch.num_attention_heads * arch.head_dim
    return dense + attn


def attention_share(arch: Arch, seq_len: int) -> float:
    """Attention FLOPs over the dense 6N term (5.5 for Qwen3-4B at 150k)."""
    return (6.0 * arch.num_hidden_layers * seq_len**2 * arch.num_attention_heads * arch.head_dim) / (
        6.0 * arch.matmul_params_per_token() * seq_len)


@dataclass
class Estimate:
    world_size: int
    sp_size: int
    seq_len: int
    tokens_per_gpu: int
    params_b: float
    active_params_b: float
    model_states_gb: float
    checkpointed_activations_gb: float
    layer_working_set_gb: float
    gathered_params_gb: float
    loss_tiles_gb: float
    overhead_gb: float
    total_gb: float
    gpu_memory_gb: float
    margin_gb: float
    fits: bool
    flops_per_seq: float
    attention_over_dense: float
    step_flops_per_gpu: float
    step_time_s: float
    tokens_per_s_per_gpu: float
    assumed_mfu: float
    gpu_peak_tflops: float
    sequences_per_step: int
    calibrated_total_gb: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def render(self, name: str = "") -> str:
        verdict = "FITS" if self.fits else "DOES NOT FIT"
        return "\n".join([
            f"--dry-run estimate{(' for ' + name) if name else ''} (per GPU, bf16, ZeRO-3 over {self.world_size} GPUs,"
            f" SP={self.sp_size}, {self.seq_len:,} tokens -> {self.tokens_per_gpu:,} per GPU)",
            f"  params: {self.params_b:.2f} B total, {self.active_params_b:.2f} B active per token",
            f"  ZeRO-3 model states (16 B/param / {self.world_size}): {self.model_states_gb:7.2f} GB",
            f"  checkpointed layer inputs (S/sp x hidden x layers):  {self.checkpointed_activations_gb:7.2f} GB",
            f"  one layer's recompute + backward working set:      {self.layer_working_set_gb:7.2f} GB",
            f"  ZeRO-3 gathered params (live + prefetch + LM head): {self.gathered_params_gb:7.2f} GB",
            f"  loss tiles (fused LM head, no S x V logits):       {self.loss_tiles_gb:7.2f} GB",
            f"  CUDA context / NCCL / fragmentation allowance:     {self.overhead_gb:7.2f} GB",
            f"  total: {self.total_gb:.1f} GB of {self.gpu_memory_gb:.0f} GB -> {verdict}, margin "
            f"{self.margin_gb:+.1f} GB ({100 * self.margin_gb / self.gpu_memory_gb:+.0f}%)",
            f"  calibrated to the measured HF ALST anchor (x{self.calibrated_total_gb / self.total_gb:.2f}): "
            f"{self.calibrated_total_gb:.1f} GB -> "
            f"{'fits' if self.calibrated_total_gb <= self.gpu_memory_gb else 'does not fit'}, margin "
            f"{self.gpu_memory_gb - self.calibrated_total_gb:+.1f} GB",
            f"  FLOPs per {self.seq_len:,}-token sequence: {self.flops_per_seq / 1e15:.1f} PFLOP (attention = "
            f"{self.attention_over_dense:.1f}x the dense 6N term)",
            f"  ideal optimizer step ({self.sequences_per_step} sequences) at {self.assumed_mfu:.0%} MFU of "
            f"{self.gpu_peak_tflops:.0f} TFLOP/s: {self.step_time_s:.1f} s; {self.tokens_per_s_per_gpu:,.0f} tokens/s/GPU",
        ])


def estimate(arch: Arch, *, world_size: int, sp_size: int, seq_len: int, micro_batch: int = 1, grad_accum: int = 1,
             gpu_memory_gb: float = 80.0, gpu_peak_tflops: float = 989.0, assumed_mfu: float = 0.3,
             activation_checkpointing: bool = True, _calibrate: bool = True) -> Estimate:
    bf16 = 2
    W, sp, S = world_size, sp_size, seq_len
    t = -(-S // sp) * micro_batch  # tokens on this rank
    h, L = arch.hidden_size, arch.num_hidden_layers
    P, Pa = arch.params(), arch.params(active=True)
    model_states = 16.0 * P / W
    # forward intermediates of one layer, bf16 elements
    qkv = (arch.num_attention_heads + 2 * arch.num_key_value_heads) * arch.head_dim
    local = t * (8 * h + 2 * qkv)  # norms, residual, attention output, q/k/v before and after RoPE
    heads_local = max(arch.num_attention_heads // sp, 1)
    kv_local = max(arch.num_key_value_heads // sp, 1)
    gathered_seq = S * micro_batch * (heads_local + 2 * kv_local) * arch.head_dim * 2  # Ulysses all-to-all in/out
    if arch.is_moe:
        mlp = t * arch.num_experts_per_tok * (3 * arch.moe_intermediate_size + 2 * h) + t * arch.num_experts
    else:
        mlp = t * 3 * arch.intermediate_size
    layer_fwd = (local + gathered_seq + mlp) * bf16
    layer_working = 2.0 * layer_fwd  # recomputed forward + its gradients
    if activation_checkpointing:
        ckpt = L * t * h * bf16
    else:
        ckpt = L * layer_fwd
    layer_params = (P - arch.vocab_size * h * (1 if arch.tie_word_embeddings else 2)) / L
    gathered = (2 * layer_params + arch.vocab_size * h) * bf16
    loss_tiles = min(t, LOSS_TILE_TOKENS) * LOSS_TILE_VOCAB * 4 * 2 + t * h * 4  # fp32 tile + grad, hidden grad
    total = model_states + ckpt + layer_working + gathered + loss_tiles + FIXED_OVERHEAD_GB * GB
    dp = max(W // sp, 1)
    seqs = micro_batch * grad_accum * dp
    f_seq = model_flops(arch, S)
    step_flops_gpu = f_seq * seqs / W
    step_time = step_flops_gpu / (gpu_peak_tflops * 1e12 * assumed_mfu)
    return Estimate(
        world_size=W, sp_size=sp, seq_len=S, tokens_per_gpu=t, params_b=P / 1e9, active_params_b=Pa / 1e9,
        model_states_gb=model_states / GB, checkpointed_activations_gb=ckpt / GB,
        layer_working_set_gb=layer_working / GB, gathered_params_gb=gathered / GB, loss_tiles_gb=loss_tiles / GB,
        overhead_gb=FIXED_OVERHEAD_GB, total_gb=total / GB, gpu_memory_gb=gpu_memory_gb,
        margin_gb=gpu_memory_gb - total / GB, fits=total / GB <= gpu_memory_gb, flops_per_seq=f_seq,
        attention_over_dense=attention_share(arch, S), step_flops_per_gpu=step_flops_gpu, step_time_s=step_time,
        tokens_per_s_per_gpu=S * seqs / W / step_time, assumed_mfu=assumed_mfu, gpu_peak_tflops=gpu_peak_tflops,
        sequences_per_step=seqs, calibrated_total_gb=total / GB * (_calibration() if _calibrate else 1.0),
    )


def _calibration() -> float:
    """Measured / estimated memory for the HF ALST anchor setup (Qwen3-4B, 4 GPUs, SP=4, 64k tokens)."""
    from calcmate.training.arch import KNOWN

    anchor = _raw_total_gb(KNOWN["Qwen/Qwen3-4B-Instruct-2507"], world_size=4, sp_size=4, seq_len=65_536)
    return ALST_ANCHOR_GB / anchor


def _raw_total_gb(arch: Arch, **kw) -> float:
    return estimate(arch, **kw, _calibrate=False).total_gb
