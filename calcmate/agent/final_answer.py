"""The structured final-answer block: one writer and one parser.

Every policy that speaks the native protocol (a CalcMate model, the scripted oracle, the
synthesizer's teacher) ends an episode with this block, so the scorer can read answers without
an LLM judge. The block is JSON between tags, one object per calculator::

    <final_answer>
    [
      {"calculator": "CHA2DS2-VASc Score", "value": 4, "unit": "points",
       "interpretation": "High risk; anticoagulation recommended"},
      {"calculator": "HAS-BLED Score", "value": 2, "unit": null, "interpretation": "Moderate"}
    ]
    </final_answer>

``value`` is a number or a string (e.g. "31 weeks 1 day", "Stage 3"). A fenced
```` ```final_answer ```` block with the same JSON is accepted too, and so is an object
``{"calculators": [...]}`` wrapping the list. Text around the block is free prose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from calcmate.agent.trajectory import FinalAnswerItem

OPEN, CLOSE = "<final_answer>", "</final_answer>"
_TAGGED = re.compile(r"<final_answer>\s*(.*?)\s*</final_answer>", re.S | re.I)
_FENCED = re.compile(r"```final_answer\s*\n(.*?)```", re.S | re.I)
_KEYS = {"calculator": ("calculator", "name", "calculator_name"), "value": ("value", "result", "final_answer", "answer")}


class FinalAnswerError(ValueError):
    """A final-answer block that is present but cannot be read; the message says what is wrong."""


def write_final_answer(items: Iterable[FinalAnswerItem | dict[str, Any]], preamble: str = "") -> str:
    """Render the block (with optional prose before it)."""
    rows = [FinalAnswerItem.model_validate(i).model_dump() for i in items]
    body = json.dumps(rows, ensure_ascii=False, indent=1)
    return (preamble.rstrip() + "\n\n" if preamble.strip() else "") + f"{OPEN}\n{body}\n{CLOSE}"


def has_final_answer(text: str) -> bool:
    return bool(text) and (OPEN in text.lower() or "```final_answer" in text.lower())


def parse_final_answer(text: str) -> list[FinalAnswerItem] | None:
    """The items of the last block in ``text``; None when there is no block.

    Raises FinalAnswerError when a block is present but malformed (bad JSON, no calculator name,
    no value), so the episode can hand the model an error observation and let it retry.
    """
    if not text:
        return None
    blocks = _TAGGED.findall(text) or _FENCED.findall(text)
    if not blocks:
        if OPEN in text.lower():
            raise FinalAnswerError(f"{OPEN} is opened but never closed with {CLOSE}")
        return None
    raw = blocks[-1].strip()
    if raw.startswith("```"):
        raw = re.sub(r"^```\w*\s*|\s*```$", "", raw)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise FinalAnswerError(f"final answer block is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if isinstance(data, dict):
        data = data.get("calculators", data.get("results", [data]))
    if not isinstance(data, list) or not data:
        raise FinalAnswerError("final answer block must hold a non-empty JSON list of calculator objects")
    items: list[FinalAnswerItem] = []
    for n, row in enumerate(data, 1):
        if not isinstance(row, dict):
            raise FinalAnswerError(f"final answer item {n} is not an object")
        name = next((row[k] for k in _KEYS["calculator"] if row.get(k) not in (None, "")), None)
        if name is None:
            raise FinalAnswerError(f"final answer item {n} has no 'calculator' name")
        value_key = next((k for k in _KEYS["value"] if k in row), None)
        if value_key is None:
            raise FinalAnswerError(f"final answer item {n} ({name}) has no 'value'")
        items.append(FinalAnswerItem(
            calculator=str(name), value=row[value_key],
            unit=None if row.get("unit") in (None, "") else str(row["unit"]),
            interpretation=None if row.get("interpretation") in (None, "") else str(row["interpretation"]),
        ))
    return items
