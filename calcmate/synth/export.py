"""Export verified trajectories as a Hugging Face ``datasets`` dataset (jsonl + parquet).

One row per trajectory:

* ``messages``: OpenAI chat format, exactly the episode the teacher ran (system, user, assistant turns
  with ``tool_calls`` and JSON-string ``arguments`` -- the first one opens with the global plan --,
  ``tool`` results, final answer); every assistant turn but the last calls a tool;
* ``tools``: the tool JSON schemas, as a JSON string (TRL's SFTTrainer decodes a string ``tools``
  column, and a string keeps parquet's schema the same for every row);
* metadata: ``domain``, ``scenario``, ``calculators``, ``num_tokens`` (under the Qwen3 chat
  template), ``teacher``, tool-call counts.

``render="react_json"`` exports the paper's JSON ReAct rendering instead: assistant turns are the
``{"thought", "action"}`` / ``{"thought", "answer"}`` JSON and observations are user turns.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from calcmate.agent.tools import CATEGORY, SQL_TOOLS
from calcmate.agent.trajectory import Trajectory
from calcmate.io import atomic_write_text
from calcmate.tasks import Task

log = logging.getLogger(__name__)
CHARS_PER_TOKEN = 3.6  # fallback estimate when no Qwen3 tokenizer is available locally

_KEEP = ("role", "content", "tool_calls", "tool_call_id", "name")


def chat_messages(traj: Trajectory) -> list[dict[str, Any]]:
    """Native-protocol messages, cleaned to chat fields: the episode as it ran. The plan is part of
    the first tool-calling turn (never a turn of its own, which would teach a model to stop there)."""
    out: list[dict[str, Any]] = []
    for m in traj.messages:
        msg = {k: m[k] for k in _KEEP if k in m and m[k] is not None}
        msg.setdefault("content", "")
        if msg.get("tool_calls"):
            msg["tool_calls"] = [_clean_call(c) for c in msg["tool_calls"]]
        out.append(msg)
    return out


def _clean_call(c: dict[str, Any]) -> dict[str, Any]:
    f = c.get("function", {})
    args = f.get("arguments", {})
    return {"id": c.get("id", ""), "type": "function",
            "function": {"name": f.get("name", ""), "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}}


def react_json_messages(traj: Trajectory, question: str | None = None) -> list[dict[str, Any]]:
    """The paper's JSON ReAct rendering: JSON assistant turns (the plan inside the first ``thought``),
    observations as user turns."""
    msgs = chat_messages(traj)
    q = question or next((m["content"] for m in msgs if m["role"] == "user"), "")
    out: list[dict[str, Any]] = [{"role": "user", "content": q}]
    seen_user = False
    for m in msgs:
        if m["role"] == "system":
            continue
        if m["role"] == "user" and not seen_user:
            seen_user = True
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                f = c["function"]
                server = next((t.server for t in traj.tool_calls if t.id == c["id"]), "")
                out.append({"role": "assistant", "content": json.dumps({"thought": m.get("content", ""), "action": {
                    "reason": m.get("content", ""), "server": server, "tool": f["name"],
                    "arguments": json.loads(f["arguments"] or "{}")}}, ensure_ascii=False)})
                m = {**m, "content": ""}
        elif m["role"] == "assistant":
            out.append({"role": "assistant", "content": json.dumps({"thought": "", "answer": m["content"]}, ensure_ascii=False)})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": f"Result: {m['content']}"})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


# -- token counting under the Qwen3 chat template -----------------------------------------------------
@lru_cache(maxsize=4)
def _tokenizer(name: str | None):
    if not name:
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception as e:  # not available offline: estimate instead, and say so once
        log.warning("tokenizer %r not available locally (%s); token counts are estimated at %.1f chars/token",
                    name, type(e).__name__, CHARS_PER_TOKEN)
        return None


def render_qwen3(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, tokenizer: Any = None) -> str:
    """The text of a conversation under the tokenizer's chat template, or TRL's stock Qwen3 one."""
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl.chat_template_utils import qwen3_instruct_2507_chat_template

    out = render_jinja_template([messages], tools=tools, chat_template=qwen3_instruct_2507_chat_template)
    rendered = out[0] if isinstance(out, tuple) else out
    return rendered[0] if isinstance(rendered, list) else rendered


def count_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, tokenizer_name: str | None) -> tuple[int, str]:
    """(tokens, method): exact with a local Qwen3 tokenizer, else estimated from the rendered text."""
    tok = _tokenizer(tokenizer_name)
    text = render_qwen3(messages, tools, tok)
    if tok is not None:
        return len(tok(text, add_special_tokens=False)["input_ids"]), "tokenizer"
    return int(round(len(text) / CHARS_PER_TOKEN)), "estimate"


# -- rows ---------------------------------------------------------------------------------------------
def tool_call_counts(traj: Trajectory) -> dict[str, int]:
    out = {"sql": 0, "python": 0, "search": 0, "fetch": 0}
    for c in traj.tool_calls:
        if c.tool in SQL_TOOLS:
            out["sql"] += 1
        elif CATEGORY.get(c.tool) in out and c.tool not in ("list_tables", "describe_tables"):
            out[CATEGORY[c.tool]] += 1
    out["describe"] = sum(c.tool in ("list_tables", "describe_tables") for c in traj.tool_calls)
    return out


def export_row(task: Task, traj: Trajectory, tools: list[dict[str, Any]], *, teacher: str,
               render: Literal["native", "react_json"] = "native", tokenizer: str | None = None,
               attempts: int = 1) -> dict[str, Any]:
    if render == "react_json":
        messages, row_tools = react_json_messages(traj, task.fuzzy_question), None
    else:
        messages, row_tools = chat_messages(traj), tools
    n_tokens, method = count_tokens(messages, row_tools, tokenizer)
    plan = task.plan or {}
    return {
        "id": task.task_id,
        "messages": messages,
        "tools": json.dumps(row_tools or [], ensure_ascii=False),
        "domain": plan.get("domain") or (task.domain.value if task.domain else ""),
        "scenario": task.task_scenario,
        "category": task.task_category,
        "calculators": [a.name for a in task.calculator_answers],
        "calculator_ids": [getattr(a, "calculator_id", "") or "" for a in task.calculator_answers],
        "n_calculators": len(task.calculator_answers),
        "num_tokens": n_tokens,
        "token_count_method": method,
        "teacher": teacher,
        "render": render,
        "tool_calls": tool_call_counts(traj),
        "attempts": attempts,
    }


def write_dataset(rows: Iterable[dict[str, Any]], out_dir: str | Path, split: str = "train") -> dict[str, Path]:
    """Write ``<out_dir>/<split>.jsonl`` and ``<split>.parquet`` atomically; return their paths.

    Both load with ``datasets.load_dataset("json"/"parquet", data_files=...)``; the jsonl is the
    source of truth and the parquet is built from it by ``datasets`` itself.
    """
    from datasets import Dataset

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = list(rows)
    jsonl = out / f"{split}.jsonl"
    atomic_write_text(jsonl, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    parquet = out / f"{split}.parquet"
    tmp = out / f".{split}.parquet.tmp"
    if rows:
        Dataset.from_list(rows).to_parquet(str(tmp))
        tmp.replace(parquet)
    else:
        parquet.unlink(missing_ok=True)
    return {"jsonl": jsonl, "parquet": parquet}
