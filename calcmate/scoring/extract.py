"""Reading an agent's final answer into (calculator, value) predictions.

Deterministic first: the structured ``<final_answer>`` block (native protocol, oracle,
synthesizer), then JSON answers (``{"name": value}`` or a list of objects, common in react_json
answers), then "Name: value" lines of free text. An optional LLM judge at any OpenAI-compatible
endpoint (the official harness uses DeepSeek-V3.1) extracts from free text that the rules
cannot read; it is off unless configured.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pydantic import BaseModel

from calcmate.agent.final_answer import FinalAnswerError, parse_final_answer
from calcmate.agent.protocols import strip_think
from calcmate.agent.trajectory import FinalAnswerItem, Trajectory


class JudgeConfig(BaseModel):
    """An OpenAI-compatible model that turns free-text answers into structured items."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120
    max_answer_chars: int = 20000


def extract_items(traj: Trajectory) -> tuple[list[FinalAnswerItem], str]:
    """The predicted items and how they were read: "block", "json", "text" or "none"."""
    if traj.final_answer:
        return list(traj.final_answer), "block"
    return extract_from_text(traj.final_answer_text or "")


def extract_from_text(text: str) -> tuple[list[FinalAnswerItem], str]:
    text, _ = strip_think(text or "")
    if not text.strip():
        return [], "none"
    try:
        items = parse_final_answer(text)
        if items:
            return items, "block"
    except FinalAnswerError:
        pass
    items = _from_json(text)
    if items:
        return items, "json"
    items = _from_lines(text)
    return items, ("text" if items else "none")


def _from_json(text: str) -> list[FinalAnswerItem]:
    cleaned = text.replace("```json", "").replace("```", "").strip()
    try:
        data = json.loads(cleaned)
    except json.JSONDecodeError:
        return []
    out: list[FinalAnswerItem] = []
    if isinstance(data, dict):
        data = data.get("calculators", data.get("results", data))
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(v, dict):
                val = next((v[x] for x in ("value", "result", "score", "answer") if x in v), None)
                out.append(FinalAnswerItem(calculator=str(k), value=val, unit=v.get("unit"), interpretation=v.get("interpretation")))
            else:
                out.append(FinalAnswerItem(calculator=str(k), value=v))
    elif isinstance(data, list):
        for row in data:
            if isinstance(row, dict):
                name = next((row[x] for x in ("calculator", "name", "calculator_name") if row.get(x)), None)
                val = next((row[x] for x in ("value", "result", "score", "answer", "final_answer") if x in row), None)
                if name is not None:
                    out.append(FinalAnswerItem(calculator=str(name), value=val, unit=row.get("unit"),
                                               interpretation=row.get("interpretation")))
    return out


_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*\**(?P<name>[^:=\n]{3,120}?)\**\s*(?::|=|→|->)\s*(?P<value>.+?)\s*$")


def _from_lines(text: str) -> list[FinalAnswerItem]:
    """"CHA2DS2-VASc score: 4 points (high risk)" lines: name left of the colon, value right."""
    out: list[FinalAnswerItem] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name, value = m.group("name").strip(" *#"), m.group("value").strip(" *")
        if not value or len(name.split()) > 14:
            continue
        interp = None
        paren = re.match(r"^(.*?)\s*\((.+)\)\s*$", value)
        if paren and re.search(r"\d", paren.group(1)):
            value, interp = paren.group(1), paren.group(2)
        out.append(FinalAnswerItem(calculator=name, value=value, interpretation=interp))
    return out


JUDGE_PROMPT = """Extract every medical calculator result stated in the answer below.
Return only a JSON list, one object per calculator: {{"calculator": name as written, "value": the result (number or text, with unit if given), "interpretation": text or null}}.
Do not add calculators the answer does not state. If there are none, return [].

Answer:
{answer}"""


async def judge_extract(text: str, cfg: JudgeConfig) -> list[FinalAnswerItem]:
    """Ask the judge model; a reply that is not a JSON list counts as no items."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "EMPTY", timeout=cfg.timeout_s)
    try:
        resp = await client.chat.completions.create(model=cfg.model, temperature=0, messages=[
            {"role": "user", "content": JUDGE_PROMPT.format(answer=text[: cfg.max_answer_chars])}])
    finally:
        await client.close()
    reply, _ = strip_think(resp.choices[0].message.content or "")
    return _from_json(reply)


async def extract_with_judge(traj: Trajectory, judge: JudgeConfig | None) -> tuple[list[FinalAnswerItem], str]:
    """Deterministic extraction; the judge only for answers that are not a structured block."""
    items, how = extract_items(traj)
    if judge is None or how in ("block", "json") or not (traj.final_answer_text or "").strip():
        return items, how
    judged = await judge_extract(traj.final_answer_text or "", judge)
    return (judged, "judge") if judged else (items, how)
