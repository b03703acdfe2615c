"""Optional LLM rewrite stage: paraphrase questions, thoughts and final prose, then re-verify.

The offline grammar (``calcmate.synth.grammar``) already varies wording; this stage sends its texts
through any OpenAI-compatible chat endpoint for freer paraphrase. Nothing that the trajectory's
correctness rests on may change, so every rewrite is checked against its original and discarded
(the original kept, the reason counted) when:

* the multiset of numbers differs (``1,000`` == ``1000``; ``7.40`` != ``7.4``: exact spellings, as the
  verifier compares them);
* the multiset of units written after a number differs (spaces and case folded: ``mm Hg`` == ``mmHg``);
* a question gains a calculator name or alias of the registry, or any digit;
* a thought or prose gains a calculator name the original did not have;
* a protected span (tool-call markup, code, the ``<final_answer>`` block) appears in or vanishes from the
  text, or the length moves outside ``[min_ratio, max_ratio]`` of the original, or it is empty.

Tool calls are never sent: ``rewrite_messages`` rewrites only assistant prose (native content outside
``<tool_call>``/code/final-answer spans; react_json ``thought`` and the prose part of ``answer``) and
copies every ``tool_calls`` entry and protected span byte for byte.

Config (``RewriteConfig``): ``base_url``, ``model``, ``api_key_env`` (the variable's name, never the key),
``concurrency``, ``temperature``, ``max_tokens``, ``timeout_s``, ``max_retries``, ``kinds``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from calcmate.calculators.spec import normalize_name

Kind = Literal["question", "thought", "prose"]


class RewriteConfig(BaseModel):
    enabled: bool = False
    base_url: str | None = None  # e.g. http://localhost:8000/v1
    model: str = "model"
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(8, ge=1)
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(2048, ge=16)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(2, ge=0)
    kinds: list[Kind] = Field(default_factory=lambda: ["question", "thought", "prose"])
    min_ratio: float = 0.5  # rewritten length / original length (characters)
    max_ratio: float = 2.0


SYSTEM = ("You rewrite clinical text written by a physician or by an assistant reasoning about a patient record. "
          "Paraphrase it in natural, varied clinical English with the same meaning. Rules: keep every number exactly "
          "as written, with its unit; keep every named calculator, score, table or column name exactly as written; "
          "add no facts, values or names; do not drop any value. Reply with the rewritten text only, no preamble, "
          "no quotes, no markdown fences.")
KIND_RULES = {
    "question": "This is a clinician's question. It must not name any clinical calculator, score or index, and must "
                "contain no digits. Keep its requests, their order and every conditional (if/otherwise) intact.",
    "thought": "This is the assistant's private reasoning before a tool call. Keep it short and first-person.",
    "prose": "This is the assistant's final explanation. Keep every result with its value, unit and interpretation.",
}


# -- the checks -------------------------------------------------------------------------------------
_NUM = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:,\d{3})*(?:\.\d+)?")
_UNIT_WORDS = (r"mg/dL|mg/L|g/dL|g/L|mmol/L|µmol/L|umol/L|μmol/L|mEq/L|mEq|mOsm/kg|mOsm/L|mL/min/1\.73\s?m²|"
               r"mL/min/1\.73\s?m2|mL/min|mL/kg/h(?:r)?|mL/h(?:r)?|mL/kg|mL|L/min|L|kg/m²|kg/m2|kg|g|mg|mcg|µg|"
               r"cm\s?H2O|cmH₂O|cm|mm\s?Hg|mmHg|kPa|bpm|/min|breaths/min|%|°C|°F|points?|criteria|years?|months?|"
               r"days?|weeks?|hours?|h|min|seconds?|s|m²|IU/L|U/L|units?|×\s?10⁹/L|x10\^9/L|10⁹/L|fL|pg|ng/mL|"
               r"µg/L|ug/L|gtt/min|MME/day|mg/kg/min|mL/cmH2O")
_NUM_UNIT = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:,\d{3})*(?:\.\d+)?\s*(" + _UNIT_WORDS + r")(?![A-Za-z])")
_PROTECTED = re.compile(r"<tool_call>.*?</tool_call>|<final_answer>.*?</final_answer>|```.*?```|`[^`\n]+`",
                        re.S | re.I)
_MARKUP = re.compile(r"<tool_call>|</tool_call>|<final_answer>|</final_answer>|<tool_response>|```", re.I)


def numbers(text: str) -> Counter:
    return Counter(m.group(0).replace(",", "").lstrip("+") for m in _NUM.finditer(text))


def units(text: str) -> Counter:
    return Counter(re.sub(r"\s+", "", m.group(1)).casefold().rstrip("s") for m in _NUM_UNIT.finditer(text))


def _names(text: str) -> Counter:
    from calcmate.synth.grammar import _all_name_patterns

    pat = _all_name_patterns()
    return Counter(pat.findall(normalize_name(text))) if pat is not None else Counter()


def check_rewrite(original: str, rewritten: str, kind: Kind, cfg: RewriteConfig | None = None) -> list[str]:
    """Why ``rewritten`` may not replace ``original`` (empty list: it may)."""
    cfg = cfg or RewriteConfig()
    problems: list[str] = []
    if not rewritten or not rewritten.strip():
        return ["empty"]
    ratio = len(rewritten) / max(1, len(original))
    if not cfg.min_ratio <= ratio <= cfg.max_ratio:
        problems.append(f"length ratio {ratio:.2f}")
    if numbers(original) != numbers(rewritten):
        lost = numbers(original) - numbers(rewritten)
        added = numbers(rewritten) - numbers(original)
        problems.append(f"numbers changed (lost {sorted(lost.elements())}, added {sorted(added.elements())})")
    if units(original) != units(rewritten):
        problems.append("units changed")
    if Counter(m.group(0).lower() for m in _MARKUP.finditer(original)) != \
            Counter(m.group(0).lower() for m in _MARKUP.finditer(rewritten)):
        problems.append("markup changed")
    new_names = set(_names(rewritten)) - set(_names(original))
    if new_names:
        problems.append(f"calculator names added: {sorted(new_names)}")
    if kind == "question" and re.search(r"\d", rewritten) and not re.search(r"\d", original):
        problems.append("digits in the question")
    return problems


# -- the client -------------------------------------------------------------------------------------
@dataclass
class RewriteStats:
    sent: int = 0
    kept: int = 0
    rejected: int = 0  # a rewrite came back but failed the checks: original kept
    failed: int = 0  # the request failed: original kept
    reasons: Counter = field(default_factory=Counter)

    def add(self, other: "RewriteStats") -> None:
        self.sent += other.sent
        self.kept += other.kept
        self.rejected += other.rejected
        self.failed += other.failed
        self.reasons.update(other.reasons)

    def as_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "kept": self.kept, "rejected": self.rejected, "failed": self.failed,
                "reasons": dict(self.reasons)}


@dataclass
class Outcome:
    original: str
    text: str  # the rewrite when kept, else the original
    kept: bool
    problems: list[str]


def _reason_key(p: str) -> str:
    return p.split(" (")[0].split(":")[0]


class Rewriter:
    """``async with Rewriter(cfg) as rw: outs = await rw.rewrite([(kind, text), ...])``"""

    def __init__(self, cfg: RewriteConfig):
        from openai import AsyncOpenAI

        if not cfg.base_url:
            raise ValueError("rewrite.base_url: required, e.g. http://localhost:8000/v1")
        self.cfg = cfg
        self.client = AsyncOpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "EMPTY",
                                  timeout=cfg.timeout_s, max_retries=cfg.max_retries)
        self._sem = asyncio.Semaphore(cfg.concurrency)
        self.stats = RewriteStats()

    async def __aenter__(self) -> "Rewriter":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.close()

    async def _one(self, kind: Kind, text: str) -> Outcome:
        if kind not in self.cfg.kinds or not text.strip():
            return Outcome(text, text, False, ["not sent"])
        msgs = [{"role": "system", "content": f"{SYSTEM} {KIND_RULES[kind]}"}, {"role": "user", "content": text}]
        self.stats.sent += 1
        try:
            async with self._sem:
                resp = await self.client.chat.completions.create(model=self.cfg.model, messages=msgs,
                                                                 temperature=self.cfg.temperature,
                                                                 max_tokens=self.cfg.max_tokens)
            out = (resp.choices[0].message.content or "").strip()
        except Exception as e:  # noqa: BLE001 - any transport/API failure keeps the original
            self.stats.failed += 1
            self.stats.reasons[f"request: {type(e).__name__}"] += 1
            return Outcome(text, text, False, [f"request failed: {type(e).__name__}"])
        out = re.sub(r"^```\w*\n?|\n?```$", "", out).strip()
        problems = check_rewrite(text, out, kind, self.cfg)
        if problems:
            self.stats.rejected += 1
            self.stats.reasons.update(_reason_key(p) for p in problems)
            return Outcome(text, text, False, problems)
        self.stats.kept += 1
        return Outcome(text, out, True, [])

    async def rewrite(self, items: Sequence[tuple[Kind, str]]) -> list[Outcome]:
        return list(await asyncio.gather(*(self._one(k, t) for k, t in items)))

    # -- whole messages ---------------------------------------------------------------------------
    async def rewrite_content(self, content: str, kind: Kind) -> str:
        """Rewrite the prose of one assistant content string; protected spans are copied verbatim."""
        if not content:
            return content
        try:
            obj = json.loads(content)
        except (ValueError, TypeError):
            obj = None
        if isinstance(obj, dict) and ("thought" in obj or "answer" in obj):  # react_json turn
            if isinstance(obj.get("thought"), str):
                obj["thought"] = await self.rewrite_content(obj["thought"], "thought")
            if isinstance(obj.get("answer"), str):
                obj["answer"] = await self.rewrite_content(obj["answer"], "prose")
            return json.dumps(obj, ensure_ascii=False)
        pieces: list[tuple[bool, str]] = []  # (protected, text)
        pos = 0
        for m in _PROTECTED.finditer(content):
            pieces.append((False, content[pos:m.start()]))
            pieces.append((True, m.group(0)))
            pos = m.end()
        pieces.append((False, content[pos:]))
        todo = [(i, t) for i, (prot, t) in enumerate(pieces) if not prot and len(t.strip()) >= 20]
        outs = await self.rewrite([(kind, pieces[i][1].strip()) for i, _ in todo])
        for (i, t), o in zip(todo, outs):
            lead = t[: len(t) - len(t.lstrip())]
            trail = t[len(t.rstrip()):]
            pieces[i] = (False, lead + o.text + trail)
        return "".join(t for _, t in pieces)

    async def rewrite_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A TRL-format conversation with assistant prose rewritten; tool calls and every other message
        unchanged. The last assistant message is treated as final prose, the others as thoughts."""
        out = [dict(m) for m in messages]
        idx = [i for i, m in enumerate(out) if m.get("role") == "assistant" and isinstance(m.get("content"), str)]
        last = max((i for i, m in enumerate(out) if m.get("role") == "assistant"), default=-1)

        async def one(i: int) -> None:
            kind: Kind = "prose" if i == last and not out[i].get("tool_calls") else "thought"
            out[i]["content"] = await self.rewrite_content(out[i]["content"], kind)

        await asyncio.gather(*(one(i) for i in idx))
        return out


async def rewrite_questions(tasks: Iterable[Any], cfg: RewriteConfig) -> tuple[list[Any], RewriteStats]:
    """Tasks with their ``fuzzy_question`` paraphrased (the original kept where the check fails)."""
    tasks = list(tasks)
    async with Rewriter(cfg) as rw:
        outs = await rw.rewrite([("question", t.fuzzy_question) for t in tasks])
        new = [t.model_copy(update={"fuzzy_question": o.text}) if o.kept else t for t, o in zip(tasks, outs)]
        return new, rw.stats


def rewrite_texts(items: Sequence[tuple[Kind, str]], cfg: RewriteConfig) -> tuple[list[Outcome], RewriteStats]:
    """Synchronous helper: rewrite ``(kind, text)`` pairs."""

    async def go() -> tuple[list[Outcome], RewriteStats]:
        async with Rewriter(cfg) as rw:
            return await rw.rewrite(items), rw.stats

    return asyncio.run(go())


def rewrite_conversations(convs: Sequence[list[dict[str, Any]]], cfg: RewriteConfig
                          ) -> tuple[list[list[dict[str, Any]]], RewriteStats]:
    """Synchronous helper: rewrite the assistant prose of many TRL conversations."""

    async def go():
        async with Rewriter(cfg) as rw:
            res = await asyncio.gather(*(rw.rewrite_messages(c) for c in convs))
            return list(res), rw.stats

    return asyncio.run(go())
