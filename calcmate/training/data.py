"""SFT rows -> token ids + assistant-only labels, with over-long samples counted, never silently cut.

Why we tokenize here rather than letting TRL do it: TRL truncates inside ``SFTTrainer.__init__`` and does not
report how many samples it cut or how many tokens are trained. We use the *same* machinery (the tokenizer's
``apply_chat_template`` with TRL's ``{% generation %}`` training template and ``return_assistant_tokens_mask``)
and hand TRL a pre-tokenized dataset (``input_ids`` + ``labels``), which it uses as is.

Row format (the synthesizer's export): ``messages`` in OpenAI chat format, assistant ``tool_calls`` as
``[{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}]``, tool results as
``{"role": "tool", "tool_call_id", "content"}``, and ``tools`` (OpenAI function schemas).

Tool-call arguments: the stock Qwen3-Instruct-2507 template prints a *string* ``arguments`` verbatim and
``tojson``-encodes a dict. Arrow stores dicts of different tools as one unified struct (absent keys become
null), so we keep arguments as JSON strings; dict arguments are serialized with ``json.dumps`` (what ``tojson``
produces). JSONL input is read line by line as text so nothing is unified; for parquet/Arrow input, null-valued
keys (unification artifacts) are dropped from messages and tool schemas.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

IGNORE_INDEX = -100


class TemplateMaskError(RuntimeError):
    """The chat template cannot produce the assistant mask that assistant-only loss needs."""


class DatasetFormatError(ValueError):
    """A row does not have the SFT format; the message names the row and field."""


# ---------------------------------------------------------------------------- chat template + mask check


def resolve_training_template(tokenizer, chat_template_path: str | None = None) -> str:
    """The template used for training: one with ``{% generation %}`` markers.

    An explicit ``chat_template_path`` wins; otherwise a template that already has markers is used as is, and
    a stock template TRL knows (e.g. Qwen3-Instruct-2507) is swapped for TRL's training twin.
    """
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if chat_template_path:
        tokenizer.chat_template = Path(chat_template_path).read_text(encoding="utf-8")
    template = tokenizer.chat_template
    if not template:
        raise TemplateMaskError("chat_template: the tokenizer has no chat template; set chat_template_path")
    if has_generation_markers(template):
        return template
    try:
        return get_training_chat_template(tokenizer)
    except ValueError as e:
        raise TemplateMaskError(
            "chat_template: the template has no {% generation %} markers and TRL has no training variant for it, "
            "so assistant-only loss cannot be computed. Set chat_template_path to a template that wraps assistant "
            f"output in {{% generation %}}...{{% endgeneration %}} ({e})"
        ) from None


_PROBE_TOOLS = [{"type": "function", "function": {"name": "run_python", "description": "Run Python.",
                 "parameters": {"type": "object", "properties": {"code": {"type": "string"}}}}}]
_PROBE = [
    {"role": "system", "content": "probe system"},
    {"role": "user", "content": "probe user question"},
    {"role": "assistant", "content": "probe plan", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run_python", "arguments": '{"code": "print(1)"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "probe tool result"},
    {"role": "assistant", "content": "probe final answer"},
]


def check_assistant_mask(tokenizer, template: str) -> float:
    """Fail clearly unless the mask covers exactly the assistant turns and their end-of-turn tokens.

    Renders a probe tool conversation and checks the trained spans. Returns the probe's trained fraction.
    """
    enc = tokenizer.apply_chat_template(
        _PROBE, tools=_PROBE_TOOLS, chat_template=template, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True,
    )
    ids, mask = enc["input_ids"], enc.get("assistant_masks")
    if not mask or 1 not in mask:
        raise TemplateMaskError(
            "chat_template: rendering a probe conversation gave an empty assistant mask; the template must wrap "
            "assistant output in {% generation %}...{% endgeneration %}")
    spans = trained_spans(tokenizer, ids, [i if m else IGNORE_INDEX for i, m in zip(ids, mask)])
    eos = tokenizer.eos_token
    problems = []
    if len(spans) != 2:
        problems.append(f"expected 2 trained spans (one per assistant turn), got {len(spans)}: {spans!r}")
    else:
        if not (spans[0].startswith("probe plan") and '"run_python"' in spans[0] and spans[0].rstrip().endswith(eos)):
            problems.append(f"first assistant turn not trained as content+tool call+{eos}: {spans[0]!r}")
        if spans[1].strip() != f"probe final answer{eos}":
            problems.append(f"final assistant turn not trained as content+{eos}: {spans[1]!r}")
    for text in ("probe system", "probe user", "probe tool result", "<|im_start|>"):
        if any(text in s for s in spans):
            problems.append(f"non-assistant text {text!r} is inside the trained tokens")
    if problems:
        raise TemplateMaskError("chat_template: assistant mask check failed: " + "; ".join(problems))
    return sum(mask) / len(mask)


def trained_spans(tokenizer, input_ids: list[int], labels: list[int]) -> list[str]:
    """Decode each maximal run of trained (label != -100) tokens; used by the startup check and tests."""
    spans, cur = [], []
    for tok, lab in zip(input_ids, labels):
        if lab != IGNORE_INDEX:
            cur.append(tok)
        elif cur:
            spans.append(tokenizer.decode(cur))
            cur = []
    if cur:
        spans.append(tokenizer.decode(cur))
    return spans


# ---------------------------------------------------------------------------- row normalization


def _drop_nulls(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_drop_nulls(v) for v in obj]
    return obj


def normalize_row(messages: Any, tools: Any, where: str = "row") -> tuple[list[dict], list[dict] | None]:
    """Parse/clean one row's messages and tools; tool-call arguments become JSON strings (see module doc)."""
    if isinstance(messages, str):
        messages = json.loads(messages)
    if isinstance(tools, str):
        tools = json.loads(tools) if tools.strip() else None
    if not isinstance(messages, list) or not messages:
        raise DatasetFormatError(f"{where}: 'messages' must be a non-empty list of chat messages")
    msgs = []
    for i, m in enumerate(_drop_nulls(messages)):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise DatasetFormatError(f"{where}: messages[{i}].role must be system/user/assistant/tool, got {role!r}")
        for j, tc in enumerate(m.get("tool_calls") or []):
            fn = tc.get("function", tc)
            if "name" not in fn:
                raise DatasetFormatError(f"{where}: messages[{i}].tool_calls[{j}] has no function name")
            args = fn.get("arguments", {})
            if not isinstance(args, str):
                fn["arguments"] = json.dumps(args, ensure_ascii=False)
        msgs.append(m)
    if not any(m["role"] == "assistant" for m in msgs):
        raise DatasetFormatError(f"{where}: no assistant message to train on")
    return msgs, (_drop_nulls(tools) if tools else None)


# ---------------------------------------------------------------------------- encoding


def encode_row(tokenizer, template: str, messages: Any, tools: Any, *, max_length: int | None,
               overlong: Literal["truncate", "drop"], where: str = "row") -> dict[str, Any]:
    """Tokenize one row with assistant-only labels and apply the over-long policy.

    Returns ``input_ids``, ``labels`` (empty when dropped), ``n_tokens`` (before truncation), ``n_trained``
    (after), and ``status``: ``ok`` | ``truncated`` | ``dropped_overlong`` | ``dropped_no_trained``.
    """
    msgs, tls = normalize_row(messages, tools, where)
    enc = tokenizer.apply_chat_template(
        msgs, tools=tls, chat_template=template, tokenize=True, return_dict=True, return_assistant_tokens_mask=True,
    )
    ids, mask = list(enc["input_ids"]), enc["assistant_masks"]
    labels = [t if m else IGNORE_INDEX for t, m in zip(ids, mask)]
    n = len(ids)
    status = "ok"
    if max_length is not None and n > max_length:
        if overlong == "drop":
            return {"input_ids": [], "labels": [], "n_tokens": n, "n_trained": 0, "status": "dropped_overlong"}
        ids, labels, status = ids[:max_length], labels[:max_length], "truncated"
    n_trained = sum(1 for x in labels if x != IGNORE_INDEX)
    if n_trained == 0:
        return {"input_ids": [], "labels": [], "n_tokens": n, "n_trained": 0, "status": "dropped_no_trained"}
    return {"input_ids": ids, "labels": labels, "n_tokens": n, "n_trained": n_trained, "status": status}


@dataclass
class DataStats:
    """What preparation did; saved beside the run and logged, so truncation is never silent."""

    rows: int = 0
    kept: int = 0
    truncated: int = 0
    dropped_overlong: int = 0
    dropped_no_trained: int = 0
    max_length: int | None = None
    overlong_policy: str = "truncate"
    tokens_before: int = 0  # all rows, before truncation
    tokens: int = 0  # kept rows, after truncation
    trained_tokens: int = 0
    trained_fraction: float = 0.0
    length_p50: int = 0
    length_p90: int = 0
    length_max: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        return (f"{self.kept}/{self.rows} rows kept; {self.truncated} truncated and {self.dropped_overlong} dropped "
                f"as over max_length={self.max_length} (policy {self.overlong_policy}); {self.dropped_no_trained} "
                f"dropped with no trained tokens; {self.tokens:,} tokens, trained fraction "
                f"{self.trained_fraction:.3f}; length p50/p90/max {self.length_p50}/{self.length_p90}/{self.length_max}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- dataset loading


def _cache_key(*parts: Any) -> str:
    """A ``datasets`` fingerprint that changes with this module's code, not just with the data.

    ``datasets`` hashes module-level functions by reference, so without this an edited function would silently
    reuse a cached map result from the old code.
    """
    h = hashlib.sha256(Path(__file__).read_bytes())
    for part in parts:
        h.update(str(part).encode())
    return h.hexdigest()[:32]


def dataset_files(path: str | Path) -> list[Path]:
    p = Path(path)
    if p.is_file():
        return [p]
    files = sorted(x for x in p.rglob("*") if x.is_file() and x.suffix in (".jsonl", ".parquet", ".arrow"))
    return [f for f in files if not f.name.startswith(".")]


def load_rows(path: str | Path):
    """A ``datasets.Dataset`` with ``messages`` and ``tools`` as JSON strings (exact, never struct-unified).

    Accepts a .jsonl file, a directory of .jsonl/.parquet files, a .parquet file, or a ``save_to_disk`` dir.
    A directory holding both (the synthesizer writes train.jsonl and train.parquet) is read from its .jsonl.
    """
    import datasets

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"dataset_path: {str(p)!r} does not exist")
    if p.is_dir() and (p / "dataset_info.json").exists() and (p / "state.json").exists():
        ds = datasets.load_from_disk(str(p))
        if isinstance(ds, datasets.DatasetDict):
            ds = ds["train"]
        return _to_json_columns(ds)
    files = dataset_files(p)
    jsonl = [str(f) for f in files if f.suffix == ".jsonl" or (p.is_file() and f.suffix == ".json")]
    parquet = [str(f) for f in files if f.suffix == ".parquet"]
    if jsonl:
        ds = datasets.load_dataset("text", data_files=jsonl, split="train")
        ds = ds.filter(lambda r: bool(r["text"].strip()))
        return ds.map(_split_json_line, remove_columns=["text"], desc="Reading rows",
                      new_fingerprint=_cache_key(ds._fingerprint, "rows"))
    if parquet:
        return _to_json_columns(datasets.load_dataset("parquet", data_files=parquet, split="train"))
    raise DatasetFormatError(f"dataset_path: {str(p)!r} holds no .jsonl or .parquet files")


def _split_json_line(r: dict[str, Any]) -> dict[str, Any]:
    row = json.loads(r["text"])
    if "messages" not in row:
        raise DatasetFormatError(f"row {str(row)[:80]!r}: missing 'messages'")
    m, t = row["messages"], row.get("tools")
    return {"messages": m if isinstance(m, str) else json.dumps(m),  # the synthesizer may store JSON strings
            "tools": t if isinstance(t, str) else json.dumps(t),
            "row_id": str(row.get("id", row.get("task_id", "")))}


def _to_json_columns(ds):
    if "messages" not in ds.column_names:
        raise DatasetFormatError(f"dataset_path: rows have no 'messages' column (columns: {ds.column_names})")

    def conv(r):
        m, t = r["messages"], r.get("tools")
        return {"messages": m if isinstance(m, str) else json.dumps(_drop_nulls(m)),
                "tools": t if isinstance(t, str) else json.dumps(_drop_nulls(t)),
                "row_id": str(r.get("id", r.get("task_id", "")) or "")}

    return ds.map(conv, remove_columns=ds.column_names, desc="Normalizing rows",
                  new_fingerprint=_cache_key(ds._fingerprint, "arrow-rows"))


def fingerprint(path: str | Path) -> dict[str, Any]:
    """sha256 over the dataset files' names and bytes: saved with the run so a result names its data."""
    h = hashlib.sha256()
    files = dataset_files(path)
    size = 0
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
    return {"path": str(Path(path).resolve()), "sha256": h.hexdigest(), "files": len(files), "bytes": size}


def encode_dataset(ds, tokenizer, template: str, *, max_length: int | None, overlong: Literal["truncate", "drop"],
                   num_proc: int | None = None):
    """Map :func:`encode_row` over a dataset from :func:`load_rows`; return (trainable dataset, DataStats)."""
    import numpy as np

    def fn(r, idx):
        return encode_row(tokenizer, template, r["messages"], r["tools"], max_length=max_length, overlong=overlong,
                          where=f"row {idx} ({r.get('row_id') or 'no id'})")

    tok_id = hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode()).hexdigest() if hasattr(
        tokenizer, "backend_tokenizer") else type(tokenizer).__name__
    enc = ds.map(fn, with_indices=True, remove_columns=ds.column_names, num_proc=num_proc,
                 desc="Tokenizing + assistant masks",
                 new_fingerprint=_cache_key(ds._fingerprint, tok_id, template, max_length, overlong))
    status = enc["status"]
    n_tokens = np.asarray(enc["n_tokens"], dtype=np.int64)
    n_trained = np.asarray(enc["n_trained"], dtype=np.int64)
    kept_idx = [i for i, s in enumerate(status) if s in ("ok", "truncated")]
    kept = enc.select(kept_idx).remove_columns(["status", "n_tokens", "n_trained"])
    lens = np.minimum(n_tokens[kept_idx], max_length) if max_length else n_tokens[kept_idx]
    stats = DataStats(
        rows=len(status), kept=len(kept_idx), truncated=status.count("truncated"),
        dropped_overlong=status.count("dropped_overlong"), dropped_no_trained=status.count("dropped_no_trained"),
        max_length=max_length, overlong_policy=overlong, tokens_before=int(n_tokens.sum()), tokens=int(lens.sum()),
        trained_tokens=int(n_trained.sum()),
        length_p50=int(np.percentile(lens, 50)) if len(lens) else 0,
        length_p90=int(np.percentile(lens, 90)) if len(lens) else 0,
        length_max=int(lens.max()) if len(lens) else 0,
    )
    stats.trained_fraction = stats.trained_tokens / stats.tokens if stats.tokens else 0.0
    return kept, stats
