"""Reading an agent's final answer into (calculator, value) predictions.

Deterministic first: the structured ``<final_answer>`` block (native protocol, oracle,
synthesizer), then JSON answers (``{"name": value}`` or a list of objects, common in react_json
answers), then "Name: value" lines of free text. An optional LLM judge at any OpenAI-compatible
endpoint (the official harness uses DeepSeek-V3.1) reads answers that are neither a block nor
JSON; it is off unless configured, and a judge that keeps failing leaves that task with no items
and a recorded reason (``Extraction.error``), never a crashed run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from calcmate.agent.final_answer import FinalAnswerError, parse_final_answer
from calcmate.agent.protocols import strip_think
from calcmate.agent.trajectory import FinalAnswerItem, Trajectory


class JudgeConfig(BaseModel):
    """An OpenAI-compatible model that turns free-text answers into structured items
    (``scoring.judge`` in configs/eval/*.yaml; the official harness uses DeepSeek-V3.1)."""

    model_config = ConfigDict(extra="forbid")
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(120, gt=0)  # per request
    attempts: int = Field(3, ge=1)  # tries per answer: 5xx/429, timeouts, connection errors, unreadable replies
    retry_wait_s: float = Field(2.0, ge=0)  # exponential backoff base between tries
    concurrency: int = Field(8, ge=1)  # judge requests in flight while scoring a run
    max_tokens: int = Field(4096, ge=1)
    max_answer_chars: int = Field(20000, ge=1)


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


JUDGE_PROMPT = """You read the final answer a clinical assistant gave to a task and extract the medical calculator results it states.
{names}Return only a JSON list, one object per calculator result stated in the answer:
{{"calculator": name, "value": the result as stated (a number, or text such as a category, stage or date), "unit": unit or null, "interpretation": text or null}}.
Copy results; do not compute, correct or add any the answer does not state. If it states none, return [].

Answer:
<<<
{answer}
>>>"""

_JUDGE_NAMES = """The task asked for these calculators. When the answer clearly reports one of them, under any name, use the name from this list; otherwise use the name the answer uses:
{lines}

"""


class JudgeError(RuntimeError):
    """The judge gave no usable extraction after its retries; the message says why."""


class _BadReply(ValueError):
    """A judge reply that is not a JSON list of results (retried: sampling may differ)."""


@dataclass(frozen=True)
class Extraction:
    """What the scorer uses: the predicted items, how they were read ("block", "json", "text",
    "judge", "judge_failed" or "none"), and why the judge failed when it did."""

    items: list[FinalAnswerItem]
    how: str
    error: str | None = None


def judge_prompt(text: str, calculators: Sequence[str] = (), max_chars: int = 20000) -> str:
    """The judge's one user message: the task's calculator names (never their values) and the answer."""
    names = [n for n in dict.fromkeys(str(c).strip() for c in calculators) if n]
    block = _JUDGE_NAMES.format(lines="\n".join(f"- {n}" for n in names)) if names else ""
    return JUDGE_PROMPT.format(names=block, answer=text[:max_chars])


def parse_judge_reply(reply: str) -> list[FinalAnswerItem]:
    """The items of a judge reply: a JSON list (fenced, or inside prose), or an object wrapping one.
    Raises _BadReply when there is none, so an empty list means "the answer states no results"."""
    body, _ = strip_think(reply or "")
    body = body.replace("```json", "").replace("```", "").strip()
    cands = [body] + ([body[body.find("["): body.rfind("]") + 1]] if "[" in body else [])
    for cand in cands:
        try:
            data = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            data = data.get("calculators", data.get("results"))
        if isinstance(data, list):
            return [i for i in _from_json(json.dumps(data)) if i.value is not None]
    raise _BadReply(f"judge reply is not a JSON list: {body[:200]!r}")


def _retryable(e: BaseException) -> bool:
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    if isinstance(e, (_BadReply, APIConnectionError, APITimeoutError)):  # APITimeoutError is a connection error too
        return True
    return isinstance(e, APIStatusError) and (e.status_code >= 500 or e.status_code in (408, 409, 429))


def _reason(e: BaseException, cfg: JudgeConfig, attempts: int) -> str:
    from openai import APIStatusError, APITimeoutError

    tries = f"{attempts} attempt{'s' * (attempts != 1)}"
    if isinstance(e, APITimeoutError):
        return f"judge timed out after {cfg.timeout_s:g} s ({tries})"
    if isinstance(e, APIStatusError):
        return f"judge HTTP {e.status_code} ({tries}): {str(e)[:200]}"
    if isinstance(e, _BadReply):
        return f"{e} ({tries})"
    return f"judge failed ({tries}): {type(e).__name__}: {str(e)[:200]}"


async def judge_extract(text: str, cfg: JudgeConfig, calculators: Sequence[str] = ()) -> list[FinalAnswerItem]:
    """Ask the judge to extract the results of ``text``. HTTP 5xx/429, timeouts, connection errors
    and unreadable replies are retried (tenacity, exponential backoff, ``cfg.attempts`` tries);
    what is still failing then raises JudgeError with the reason."""
    from openai import AsyncOpenAI

    prompt = judge_prompt(text, calculators, cfg.max_answer_chars)
    client = AsyncOpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "EMPTY",
                         timeout=cfg.timeout_s, max_retries=0)  # tenacity is the one retry policy
    tried = 0
    try:
        async for attempt in AsyncRetrying(stop=stop_after_attempt(cfg.attempts), reraise=True,
                                           wait=wait_exponential(multiplier=cfg.retry_wait_s, max=60),
                                           retry=retry_if_exception(_retryable)):
            with attempt:
                tried += 1
                resp = await client.chat.completions.create(
                    model=cfg.model, temperature=0, max_tokens=cfg.max_tokens,
                    messages=[{"role": "user", "content": prompt}])
                if not resp.choices:
                    raise _BadReply("judge reply has no choices")
                return parse_judge_reply(resp.choices[0].message.content or "")
    except Exception as e:  # noqa: BLE001 -- every failure becomes a reason, never a crash of the run
        raise JudgeError(_reason(e, cfg, tried)) from e
    finally:
        await client.close()
    raise JudgeError("judge made no attempt")  # unreachable: stop_after_attempt(>=1)


async def extract_for_scoring(traj: Trajectory, judge: JudgeConfig | None,
                              calculators: Sequence[str] = ()) -> Extraction:
    """Deterministic extraction; with a judge configured, answers that are not a structured block
    or JSON go to the judge (told the task's ``calculators`` names), and its reading is used, an
    empty list included. A judge that keeps failing gives no items, ``how="judge_failed"`` and the
    reason: a task is never scored from a mix of judge and rules, and never crashes the run."""
    items, how = extract_items(traj)
    text = traj.final_answer_text or ""
    if judge is None or how in ("block", "json") or not text.strip():
        return Extraction(items, how)
    try:
        return Extraction(await judge_extract(text, judge, calculators), "judge")
    except JudgeError as e:
        return Extraction([], "judge_failed", str(e))


async def extract_all(pairs: Sequence[tuple[Trajectory | None, Sequence[str]]],
                      judge: JudgeConfig | None) -> list[Extraction]:
    """``extract_for_scoring`` over (trajectory, calculator names) pairs, ``judge.concurrency``
    judge calls at a time; an unfinished or missing trajectory extracts nothing."""
    sem = asyncio.Semaphore(judge.concurrency if judge else 1)

    async def one(traj: Trajectory | None, names: Sequence[str]) -> Extraction:
        if traj is None or not traj.finished:
            return Extraction([], "none")
        async with sem:
            return await extract_for_scoring(traj, judge, names)

    return list(await asyncio.gather(*(one(t, n) for t, n in pairs)))
