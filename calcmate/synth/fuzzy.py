"""Fuzzy question writer (offline templates) and the rules every fuzzy question must follow.

The paper's rules: the question reads like a clinician thinking aloud, names no calculator, and
gives no patient values (the agent must find them in the EHR). The workflow's order, dependency
and branch are described in clinical words. ``check_question`` enforces the rules for the offline
writer and for LLM-written questions alike.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from calcmate.calculators.registry import Registry
from calcmate.calculators.spec import Calculator, normalize_name
from calcmate.synth.composer import Workflow

OPENINGS = (
    "I'm seeing {context}, and I want to work through this systematically.",
    "I'm looking after {context} and need help structuring the assessment.",
    "We have {context}; before deciding on management I'd like a clear, stepwise picture.",
    "I'm evaluating {context} and want a defensible plan for the next few hours.",
)
FIRST = ("First, I want {need}.", "To start, I need {need}.", "My first step is {need}.")
NEXT = ("Then I want {need}.", "Next, I'd like {need}.", "After that, I need {need}.", "I also want {need}.")
FEED = ("Use that result directly for the next step: I need {need}.",
        "Carry that result forward, since it feeds {need}.")
BRANCH = (
    "That result decides the next step: if it falls in the \"{then}\" range or beyond, I want {then_need}; "
    "otherwise, {else_need}.",
    "Depending on where that lands: at \"{then}\" or beyond, I'd go on to {then_need}; if not, {else_need}.",
)
SKIP = ("no extra assessment is needed on that branch", "skip that step and move on")
CLOSINGS = (
    "Please use only what is documented in the record, and give each result with its interpretation.",
    "Pull everything from the chart, and summarise each result and what it means for management.",
    "Base everything on the patient's record and tell me how each result changes the plan.",
)

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


def write_question(wf: Workflow, executed_order: list[str], reg: Registry, rng: random.Random) -> str:
    """Template question over the whole workflow (both branch arms are described)."""
    calcs = [reg.get(s.calc_id) for s in wf.steps]
    ctx = wf.category.context or f"a patient where {wf.category.name.lower()} is the concern"
    parts = [rng.choice(OPENINGS).format(context=ctx)]
    branch = wf.branches[0] if wf.branches else None
    fed_targets = {d.dst for d in wf.dependencies if d.kind == "feeds"}
    arm_ids = set(branch.then + branch.else_) if branch else set()
    first = True
    for s in wf.steps:
        if s.calc_id in arm_ids:
            continue
        calc = reg.get(s.calc_id)
        need = need_phrase(calc, calcs)
        tmpl = FIRST if first else (FEED if s.calc_id in fed_targets else NEXT)
        parts.append(rng.choice(tmpl).format(need=need))
        first = False
        if branch and s.calc_id == branch.decider:
            then_need = " and ".join(need_phrase(reg.get(i), calcs) for i in branch.then)
            else_need = (" and ".join("get " + need_phrase(reg.get(i), calcs) for i in branch.else_)
                         if branch.else_ else rng.choice(SKIP))
            parts.append(rng.choice(BRANCH).format(then=clean_label(scrub(branch.then_label, calcs)), then_need=then_need,
                                                   else_need=else_need))
    parts.append(rng.choice(CLOSINGS))
    return " ".join(p[0].upper() + p[1:] for p in parts)


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
