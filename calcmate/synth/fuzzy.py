"""Fuzzy question writer (the offline grammar) and the rules every fuzzy question must follow.

The paper's rules: the question reads like a clinician thinking aloud, names no calculator, and
gives no patient values (the agent must find them in the EHR). The workflow's order, dependency
and branch are described in clinical words. ``check_question`` enforces the rules for the offline
writer and for LLM-written questions alike.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from calcmate.calculators.registry import Registry
from calcmate.calculators.spec import Calculator, normalize_name
from calcmate.synth.composer import Workflow

_PAREN_NUM = re.compile(r"\s*[\(\[][^\)\]]*\d[^\)\]]*[\)\]]")


@dataclass
class QuestionIssue:
    kind: str  # "calculator_name" | "patient_value"
    text: str


def clean_label(label: str) -> str:
    """A band label without the numbers in brackets: "Severely reduced (15-29 mL/min)" -> "severely reduced"."""
    return _PAREN_NUM.sub("", label).strip().rstrip(".").lower() or "abnormal"


def names_of(calc: Calculator) -> list[str]:
    return [n for n in (calc.name, calc.id.replace("_", " "), *calc.aliases) if len(normalize_name(n)) >= 3]


def scrub(text: str, calcs: list[Calculator]) -> str:
    """Replace calculator names and aliases in ``text`` with a neutral phrase."""
    names = sorted({n for c in calcs for n in names_of(c)}, key=len, reverse=True)
    for n in names:
        words = normalize_name(n).split()
        pattern = r"(?<![0-9A-Za-z])" + r"[\W_]*".join(re.escape(w) for w in words) + r"(?![0-9A-Za-z])"
        text = re.sub(pattern, "this measure", text, flags=re.I)
    return text


def need_phrase(calc: Calculator, all_calcs: list[Calculator]) -> str:
    """What the clinician needs from ``calc``, in words that avoid its name."""
    purpose = (calc.reference.purpose or "").strip().split(". ")[0].rstrip(".")
    if purpose:
        first, _, rest = purpose.partition(" ")
        if first.lower().endswith("s") and first.lower() not in {"is", "was", "has", "this"} and rest:
            phrase = f"a validated tool that {first.lower()} {rest}"
        else:
            phrase = f"an assessment of {purpose[0].lower()}{purpose[1:]}"
        phrase = scrub(phrase, all_calcs)
        if not find_names(phrase, all_calcs):
            return phrase
    tags = [t for t in calc.tags if not find_names(t, all_calcs)]
    return f"a standardised {tags[0] if tags else 'bedside'} assessment to guide this decision"


def write_question(wf: Workflow, executed_order: list[str], reg: Registry, rng: random.Random,
                   patient: Any = None) -> str:
    """The clinician's question for a workflow, from the offline grammar (``calcmate.synth.grammar``).

    Both branch arms are described. With the sampled ``patient`` the presentation also gives age (in
    words), sex, history and qualitative findings; ``grammar.question(task, rng)`` does the same from a
    finished ``Task``. ``executed_order`` is kept for callers; the grammar reads the plan itself.
    """
    from calcmate.synth.grammar import question_from_view, view_from_workflow

    return question_from_view(view_from_workflow(wf, reg, patient), rng)


def find_names(text: str, calcs: list[Calculator]) -> list[str]:
    """Calculator names or aliases that appear in ``text`` (normalised, whole words)."""
    t = f" {normalize_name(text)} "
    return [n for c in calcs for n in names_of(c) if f" {normalize_name(n)} " in t]


def _small_count(vn: str) -> bool:
    return vn.isdigit() and int(vn) <= 20


def check_question(question: str, calcs: list[Calculator], values: list[str]) -> list[QuestionIssue]:
    """The rule breaks in a fuzzy question: calculator names, and patient values (as written in the task)."""
    issues = [QuestionIssue("calculator_name", n) for n in dict.fromkeys(find_names(question, calcs))]
    qn = f" {normalize_name(question)} "
    for v in dict.fromkeys(values):
        vn = normalize_name(v)
        if not vn or not any(ch.isdigit() for ch in vn) or _small_count(vn):
            continue  # yes/no and choice labels, and bare small counts (points, items) that any prose has
        if f" {vn} " in qn:
            issues.append(QuestionIssue("patient_value", v))
    return issues
