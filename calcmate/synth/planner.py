"""Planning header: the global plan (calculators, order, inputs, dependencies, branch conditions)
written as the first assistant turn of a trajectory, as in the paper (~10% of tokens).

The same text, in the benchmark's "Step-by-step calculator workflow" style, is the task's hidden
``task_description``.
"""

from __future__ import annotations

from calcmate.calculators.registry import Registry
from calcmate.synth.composer import Branch, Workflow
from calcmate.synth.fuzzy import clean_label


def _cond(b: Branch, reg: Registry) -> str:
    d = reg.get(b.decider)
    if b.op == "==":
        return f"{d.name} is \"{b.threshold}\""
    unit = f" {d.output.unit}" if d.output.unit else ""
    return f"{d.output.label} ≥ {b.threshold:g}{unit} ({clean_label(b.then_label)})"


def plan_lines(wf: Workflow, reg: Registry) -> list[str]:
    branch = wf.branches[0] if wf.branches else None
    arms = set(branch.then + branch.else_) if branch else set()
    feeds = {(d.dst): d for d in wf.dependencies if d.kind == "feeds"}
    lines: list[str] = []
    n = 0
    for s in wf.steps:
        if s.calc_id in arms:
            continue
        n += 1
        c = reg.get(s.calc_id)
        needs = ", ".join(i.label for i in c.inputs if not i.optional) or "no required inputs"
        line = f"{n}. {c.name}: inputs {needs}."
        if s.calc_id in feeds:
            d = feeds[s.calc_id]
            line += f" Uses the result of {reg.get(d.src).name} as its {c.input(d.quantity).label.lower()}."
        lines.append(line)
        if branch and s.calc_id == branch.decider:
            then = " and ".join(reg.get(i).name for i in branch.then)
            other = " and ".join(reg.get(i).name for i in branch.else_) or "no further calculator on this branch"
            n += 1
            lines.append(f"{n}. Branch on {reg.get(branch.decider).name}: if {_cond(branch, reg)}, use {then}; "
                         f"otherwise, {'use ' + other if branch.else_ else other}.")
    return lines


def planning_header(wf: Workflow, reg: Registry) -> str:
    """The first assistant turn: the whole plan before any tool call."""
    return ("Plan:\n" + "\n".join(plan_lines(wf, reg)) + "\n"
            "For each calculator I will search for and fetch its reference, find the tables that hold its inputs "
            "and retrieve them with SQL, compute it with Python, and check which branch the result triggers "
            "before moving on. I will finish with every result and its interpretation.")


def task_description(wf: Workflow, reg: Registry) -> str:
    return (f"Clinical scenario: {wf.category.context or wf.category.name}.\n\n"
            "Step-by-step calculator workflow:\n" + "\n".join(plan_lines(wf, reg)))
