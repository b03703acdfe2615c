"""LLM teachers at OpenAI-compatible endpoints: the planner (task text) and the executor (a policy).

As in the paper, a planner model writes the task (scenario, workflow, fuzzy question, planning
header) and an executor model runs the ReAct episode. Here the planner only writes *text*: the
workflow structure and every number come from the registry (composer + sampler), so nothing the
LLM writes can make a ground-truth value wrong. Its output is checked (no calculator names or
patient values in the question; every calculator named in the plan) and retried with feedback. The
executor is an ordinary ``ModelPolicy`` over the agent's OpenAI HTTP backend; a trajectory the
verifier rejects is re-run with ``executor_retry_prompt``.

Retry feedback, to either model, describes the process only: the kind of rule broken ("a value you
used appears in no tool result", "the plan leaves out a calculator"), never a calculator name, an
input value or a result (``feedback_leaks`` checks a text for those).

The prompts are reconstructed from the paper's description of its task-generation step (the
released code does not ship them): clinician voice, no calculator names, no patient values,
explicit dependency and conditional branch.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from calcmate.calculators.registry import Registry
from calcmate.synth.build import TaskSpec
from calcmate.synth.fuzzy import check_question, find_names
from calcmate.synth.planner import plan_lines


class EndpointConfig(BaseModel):
    """One OpenAI-compatible chat endpoint (vLLM, SGLang, a hosted API)."""

    model_config = ConfigDict(extra="forbid")
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"  # the variable holding the key, never the key itself
    concurrency: int = Field(16, ge=1)
    temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(2048, gt=0)
    timeout_s: float = Field(300, gt=0)
    retries: int = Field(4, ge=1)  # transport retries (tenacity, exponential backoff)


class TeacherError(RuntimeError):
    """The teacher's output still broke the rules after every retry."""


QUESTION_PROMPT = """You write realistic clinical questions for training a medical-calculator agent.

Scenario: {scenario} ({specialty}); patient context: {context}.
The clinician's hidden workflow, in order (do NOT name these calculators):
{plan}

Write the question a clinician would ask a colleague at the EHR workstation about this patient:
- natural, first-person clinical language, 120-250 words, one or two paragraphs;
- describe what each step must establish clinically, in order, including that one result feeds the next;
- state the conditional branch in clinical words ("if that comes back ..., then ...; otherwise ...");
- NEVER name a calculator, score, index, formula or equation (no acronyms either);
- NEVER give patient values (no numbers, ages, lab results, dates): the agent must look them up;
- end by asking for each result and its interpretation.
Reply with the question only."""

HEADER_PROMPT = """You are planning a tool-augmented clinical calculation before executing it.
Question: {question}

The verified workflow (calculators, order, inputs, dependencies, branch conditions):
{plan}

Write the planning header the agent states before its first tool call: a numbered global plan that
names every calculator above, its inputs, the order, which result feeds which, and the branch
condition with both outcomes, then one sentence on how each calculator will be executed (search and
fetch its reference, describe tables and query inputs with SQL, compute with Python). Plain text, no
patient values. Reply with the plan only."""


# -- retry feedback: the process only ---------------------------------------------------------------
# Feedback for a retry says what kind of rule was broken, never which calculator, input value or
# result: a retried executor must not learn from the reviewer what the tools did not show it (its
# kept trajectory is exported with the prompt it saw), and the planner gets the same discipline.
EMPTY_FEEDBACK = "- the answer was empty"
QUESTION_FEEDBACK = {
    "calculator_name": "- the question names a calculator, score, index or formula (or its acronym): describe what "
                       "each step must establish clinically instead",
    "patient_value": "- the question gives a patient value (a number, age, measurement or date): the agent must "
                     "look every value up",
}
HEADER_FEEDBACK = "- the plan leaves out a calculator of the verified workflow: name every one, in order"
EXECUTOR_RETRY = ("A reviewer rejected your previous attempt at this task. What went wrong, in general terms:\n"
                  "{feedback}\nRedo the task from the beginning and avoid these problems.")


def question_feedback(kinds: list[str]) -> str:
    """Process-only feedback for a question that broke the rules (one line per kind of break)."""
    lines = [QUESTION_FEEDBACK.get(k, "- the question breaks the rules above") for k in dict.fromkeys(kinds)]
    return "\n".join(lines) or EMPTY_FEEDBACK


def executor_retry_prompt(system_prompt: str, verdict: Any) -> str:
    """The system prompt of a retried executor episode: the original, then the verifier's
    process-only feedback (``Verdict.feedback()``). A kept retry is exported with exactly this prompt."""
    return f"{system_prompt}\n\n" + EXECUTOR_RETRY.format(feedback=verdict.feedback())


def feedback_leaks(feedback: str, task: Any) -> list[str]:
    """What ``feedback`` gives away about ``task``: calculator names (and aliases), input values
    (as written in the task) and results. Empty for process-only feedback."""
    from calcmate.calculators.registry import registry
    from calcmate.calculators.spec import normalize_name

    reg = registry()
    text = f" {normalize_name(feedback)} "
    out: list[str] = []
    ids = [getattr(a, "calculator_id", None) for a in task.calculator_answers]
    for bd in (getattr(task, "plan", None) or {}).get("branches", []):
        ids += list(bd.get("then", [])) + list(bd.get("else", []))
    names = {a.name for a in task.calculator_answers}
    for i in ids:
        c = reg.find(i) if i else None
        if c is not None:
            names |= {c.name, *c.aliases}
    out += [n for n in sorted(names) if len(normalize_name(n)) >= 3 and f" {normalize_name(n)} " in text]
    values = [str(inp.value) for a in task.calculator_answers for inp in a.inputs]
    values += [str(a.final_answer) for a in task.calculator_answers]
    for v in dict.fromkeys(values):
        k = normalize_name(v)
        if k and (any(ch.isdigit() for ch in k) or len(k) >= 4) and f" {k} " in text:
            out.append(v)
    return out


class PlannerClient:
    """Async chat client with bounded concurrency and tenacity retries on transport errors."""

    def __init__(self, cfg: EndpointConfig):
        from openai import AsyncOpenAI

        self.cfg = cfg
        self.client = AsyncOpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "EMPTY",
                                  timeout=cfg.timeout_s, max_retries=0)
        self.sem = asyncio.Semaphore(cfg.concurrency)
        self.calls = 0

    async def complete(self, prompt: str, feedback: str | None = None) -> str:
        from openai import APIConnectionError, APITimeoutError, InternalServerError, RateLimitError

        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        if feedback:
            messages.append({"role": "user", "content": f"Your previous answer broke these rules; fix them:\n{feedback}"})
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.cfg.retries), wait=wait_exponential(multiplier=0.5, max=20), reraise=True,
            retry=retry_if_exception_type((APIConnectionError, APITimeoutError, InternalServerError, RateLimitError)),
        ):
            with attempt:
                async with self.sem:
                    self.calls += 1
                    r = await self.client.chat.completions.create(
                        model=self.cfg.model, messages=messages, temperature=self.cfg.temperature,
                        max_tokens=self.cfg.max_tokens)
        return (r.choices[0].message.content or "").strip()

    async def aclose(self) -> None:
        await self.client.close()


async def write_texts(client: PlannerClient, spec: TaskSpec, reg: Registry, value_texts: list[str],
                      max_rounds: int = 3) -> tuple[str, str, list[str]]:
    """(fuzzy question, planning header, rule problems seen on the way) written by the planner LLM."""
    cat, wf = spec.category, spec.workflow
    calcs = [reg.get(s.calc_id) for s in wf.steps]
    plan = "\n".join(plan_lines(wf, reg))
    problems: list[str] = []
    question, feedback = "", None
    for _ in range(max_rounds):
        question = await client.complete(QUESTION_PROMPT.format(scenario=cat.name, specialty=cat.specialty,
                                                                context=cat.context, plan=plan), feedback)
        issues = check_question(question, calcs, value_texts)
        if question and not issues:
            break
        feedback = question_feedback([i.kind for i in issues])
        problems += [f"question:{i.kind}" for i in issues] or ["question:empty"]
    else:
        raise TeacherError(f"planner broke the question rules {max_rounds} times: {problems}")
    header, feedback = "", None
    for _ in range(max_rounds):
        header = await client.complete(HEADER_PROMPT.format(question=question, plan=plan), feedback)
        missing = [c.name for c in calcs if not find_names(header, [c])]
        if header and not missing:
            break
        feedback = HEADER_FEEDBACK if missing else EMPTY_FEEDBACK
        problems += [f"header:missing:{m}" for m in missing]
    else:
        raise TeacherError(f"planner's header missed calculators {max_rounds} times: {problems}")
    return question, header, problems
