"""Verification: keep a trajectory only if it is right, for the right reasons.

A trajectory of a synthesized task passes when

* it finished with a structured final answer naming every executed calculator (``incomplete``),
  and no calculator of an arm the branch did not take (``wrong_branch``);
* every final value equals the registry's value within tolerance (``wrong_value``), and a
  ``run_python`` result shows that value (``not_computed``): computed by a tool, not guessed;
* every ground-truth input value reached the agent through a tool result: SQL results for EHR
  inputs, SQL or Python results for inputs fed by an earlier calculator (``input_not_retrieved``);
* each branch arm matches the decider's value, both the agent's reported value and the registry's
  (``wrong_branch``).

Matching uses the evaluator's own logic (calcmate.scoring: name matching, ``values_match``, the EA
evidence search), so "verified" here and "correct" in evaluation mean the same thing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from calcmate.agent.trajectory import Trajectory
from calcmate.calculators.spec import normalize_name
from calcmate.scoring.metrics import SqlEvidence, item_matches, match_names
from calcmate.scoring.tolerance import values_match
from calcmate.synth.composer import branch_from_dict
from calcmate.tasks import Task

REASONS = ("not_finished", "incomplete", "wrong_value", "not_computed", "input_not_retrieved", "wrong_branch")
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass
class Issue:
    reason: str  # one of REASONS
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


@dataclass
class Verdict:
    ok: bool
    issues: list[Issue] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        return list(dict.fromkeys(i.reason for i in self.issues))

    def feedback(self) -> str:
        """Text for a retry: what was wrong, without giving away the answers."""
        return "\n".join(f"- {i.reason}: {i.detail}" for i in self.issues)


class _Evidence(SqlEvidence):
    """The evaluator's EA evidence search over any set of tool results."""

    def __init__(self, texts: list[str]):  # noqa: D107 - same fields as SqlEvidence
        self.raw = "\n".join(texts)
        self.norm = " " + normalize_name(self.raw) + " "
        self.numbers = [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", self.raw.replace(",", ""))]


def _results(traj: Trajectory, tools: tuple[str, ...]) -> list[str]:
    return [c.result for c in traj.tool_calls if c.tool in tools and not c.is_error]


def shows_value(texts: list[str], truth: Any, rel_tol: float) -> bool:
    """Does any tool output show ``truth`` (a number within tolerance, or the category text)?"""
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        for t in texts:
            for x in _NUM.findall(t.replace(",", "")):
                if values_match(float(x), truth, rel_tol):
                    return True
        return False
    k = normalize_name(str(truth))
    return bool(k) and any(f" {k} " in f" {normalize_name(t)} " for t in _decoded(texts))


def _decoded(texts: list[str]) -> list[str]:
    """Outputs as printed, plus JSON-printed strings decoded (a printed "a\\nb" is the text a<newline>b)."""
    out = list(texts)
    for t in texts:
        for line in t.strip().splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, str):
                out.append(v)
    return out


def verify(task: Task, traj: Trajectory, rel_tol: float = 0.01, name_threshold: float = 85.0) -> Verdict:
    """Check a trajectory against its synthesized task's ground truth (see the module docstring)."""
    issues: list[Issue] = []
    plan = task.plan or {}
    truths = task.calculator_answers
    items = traj.final_answer or []
    if not traj.finished or not items:
        issues.append(Issue("not_finished", f"no structured final answer (stop: {traj.stop_reason or 'none'})"))
    # final answer: every executed calculator, right values
    assign = match_names([i.calculator for i in items], [a.name for a in truths], name_threshold)
    for ti, a in enumerate(truths):
        pi = assign.get(ti)
        if pi is None:
            if items:
                issues.append(Issue("incomplete", f"final answer lacks {a.name}"))
            continue
        if not item_matches(items[pi], a.final_answer, rel_tol):
            issues.append(Issue("wrong_value", f"{a.name}: answered {items[pi].value!r}, registry value {a.final_answer!r}"))
    # computed by a tool
    py = _results(traj, ("run_python",))
    for a in truths:
        if not shows_value(py, a.final_answer, rel_tol):
            issues.append(Issue("not_computed", f"no run_python result shows the value of {a.name}"))
    # inputs reached the agent through tool results
    sql_ev = _Evidence(_results(traj, ("run_sql", "run_read_only_sql")))
    any_ev = _Evidence(_results(traj, ("run_sql", "run_read_only_sql", "run_python")))
    for a in truths:
        for inp in a.inputs:
            fed = str(getattr(inp, "source", "") or "").startswith("calculator:")
            ev = any_ev if fed else sql_ev
            if not ev.contains(inp.value, inp.field):
                issues.append(Issue("input_not_retrieved", f"{a.name}: {inp.field} = {inp.value!r} is in no "
                                    f"{'tool' if fed else 'SQL'} result"))
    # branches
    by_name = {normalize_name(a.name): a for a in truths}
    answered = [i.calculator for i in items]
    for bd in plan.get("branches", []):
        b = branch_from_dict(bd)
        taken = bd.get("taken")
        if bd.get("decider_value") is not None and b.arm(bd["decider_value"]) != taken:
            issues.append(Issue("wrong_branch", f"plan says {taken!r} but the registry value {bd['decider_value']!r} selects {b.arm(bd['decider_value'])!r}"))
        dec_truth = next((a for a in truths if getattr(a, "calculator_id", None) == b.decider), None)
        if dec_truth is not None:
            hit = match_names(answered, [dec_truth.name], name_threshold).get(0)
            if hit is not None and b.arm(_as_number(items[hit].value)) != taken:
                issues.append(Issue("wrong_branch", f"answered {dec_truth.name} = {items[hit].value!r}, which selects "
                                    f"the {b.arm(_as_number(items[hit].value))!r} arm, but {taken!r} was taken"))
        skipped = b.else_ if taken == "then" else b.then
        skipped_names = [n for n in (_calc_name(i) for i in skipped) if n and normalize_name(n) not in by_name]
        # only answers left over after matching the executed calculators can name a skipped one, so a
        # close name of an executed calculator ("Delta Ratio" in "Albumin Corrected Delta Ratio") is not blamed
        leftover = [n for i, n in enumerate(answered) if i not in set(assign.values())]
        for idx in match_names(leftover, skipped_names, name_threshold):
            issues.append(Issue("wrong_branch", f"final answer includes {skipped_names[idx]}, from the arm not taken"))
    return Verdict(not issues, issues)


def _as_number(v: Any) -> Any:
    if isinstance(v, str):
        m = _NUM.search(v.replace(",", ""))
        if m and not re.search(r"[A-Za-z]{3,}", v):
            return float(m.group())
    return v


def _calc_name(calc_id: str) -> str | None:
    from calcmate.calculators.registry import registry

    c = registry().find(calc_id)
    return c.name if c else None
