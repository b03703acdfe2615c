"""Offline task creation: taxonomy category -> workflow -> patient -> MedMCP-Calc ``Task``.

A synthesized task has exactly the benchmark's shape (``calculator_answers[].inputs`` with free-text
``field`` and ``value`` with units, so the one materializer places them in PostgreSQL), plus
``plan`` metadata: steps, dependencies, branches (with the arm taken and the decider's value),
the planning header, and which inputs were fed by an earlier calculator.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass
from typing import Any

from calcmate.calculators.registry import Registry
from calcmate.domains import Domain
from calcmate.synth.composer import CompositionError, Workflow, compose
from calcmate.synth.fuzzy import check_question, write_question
from calcmate.synth.planner import planning_header, task_description
from calcmate.synth.sampler import Patient, SamplingError, choice_score, display_value, sample_patient
from calcmate.synth.taxonomy import Category, Taxonomy
from calcmate.tasks import CalcAnswer, CalcInput, Task


class TaskCreationError(ValueError):
    """No valid task could be created for this index within the attempt budget."""


@dataclass
class TaskSpec:
    """What the offline composer decided; the text writers (templates or an LLM) work from it."""

    task_id: str
    category: Category
    workflow: Workflow
    patient: Patient
    seed: str


def task_rng(seed: int | str, index: int) -> random.Random:
    return random.Random(f"calcmate-synth:{seed}:{index}")


def task_id_for(seed: int | str, index: int) -> str:
    h = hashlib.sha1(f"{seed}:{index}".encode()).hexdigest()[:8]
    return f"synth_{index:06d}_{h}"


def pick_category(tax: Taxonomy, rng: random.Random, index: int, min_calcs: int = 1,
                  domain_weights: dict[str, float] | None = None) -> Category:
    """Domain-balanced choice: domains in turn (or by weight), then a usable category within it."""
    usable = tax.usable(min_calcs)
    if not usable:
        raise TaskCreationError("no taxonomy category has registry calculators")
    domains = [d for d in Domain if any(c.domain == d for c in usable)]
    if domain_weights:
        w = [float(domain_weights.get(d.value, 0.0)) for d in domains]
        d = rng.choices(domains, weights=w)[0] if sum(w) > 0 else domains[index % len(domains)]
    else:
        d = domains[index % len(domains)]
    return rng.choice([c for c in usable if c.domain == d])


def make_spec(tax: Taxonomy, reg: Registry, seed: int | str, index: int, *, min_calcs: int = 4,
              max_calcs: int = 10, max_tries: int = 25, domain_weights: dict[str, float] | None = None) -> TaskSpec:
    """Compose a workflow and sample a consistent patient for task ``index`` (deterministic per seed)."""
    rng = task_rng(seed, index)
    errors: list[str] = []
    for _ in range(max_tries):
        cat = pick_category(tax, rng, index, domain_weights=domain_weights)
        try:
            wf = compose(cat, reg, rng, min_calcs, max_calcs)
            patient = sample_patient(wf, reg, rng)
        except (CompositionError, SamplingError) as e:
            errors.append(f"{cat.name}: {e}")
            continue
        if not min_calcs <= len(patient.executed) <= max_calcs:
            errors.append(f"{cat.name}: {len(patient.executed)} calculators executed")
            continue
        return TaskSpec(task_id_for(seed, index), cat, wf, patient, str(seed))
    raise TaskCreationError(f"task {index}: no valid workflow after {max_tries} tries; last: {errors[-3:]}")


def _jsonable(v: Any) -> Any:
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def to_task(spec: TaskSpec, reg: Registry, question: str, header: str | None = None,
            description: str | None = None) -> Task:
    """Assemble the MedMCP-Calc-format task for a spec and its question text."""
    wf, p = spec.workflow, spec.patient
    answers: list[CalcAnswer] = []
    for order, cid in enumerate(p.executed, 1):
        calc = reg.get(cid)
        inputs = []
        for key, raw in p.values[cid].items():
            extra = {"source": f"calculator:{p.fed[cid][key]}"} if key in p.fed.get(cid, {}) else {}
            inputs.append(CalcInput(field=calc.input(key).label, value=display_value(calc, key, raw),
                                    score=choice_score(calc, key, raw), **extra))
        res = p.results[cid]
        answers.append(CalcAnswer(order=order, name=calc.name, inputs=inputs, final_answer=_jsonable(res.value),
                                  notes="; ".join(x for x in (res.display(), res.interpretation) if x),
                                  calculator_id=cid, unit=res.unit, interpretation=res.interpretation))
    plan = wf.to_plan()
    for b in plan["branches"]:
        b["taken"] = p.arms.get(b["decider"])
        b["decider_value"] = _jsonable(p.results[b["decider"]].value)
    plan.update(executed=list(p.executed), fed={k: dict(v) for k, v in p.fed.items()},
                header=header if header is not None else planning_header(wf, reg), seed=spec.seed)
    return Task(
        task_id=spec.task_id, task_scenario=spec.category.name, task_category=spec.category.task_category,
        patient_id=f"P{spec.task_id[6:]}", fuzzy_question=question,
        task_description=description if description is not None else task_description(wf, reg),
        required_calculators=[reg.get(c).name for c in p.executed], calculator_answers=answers, plan=plan,
    )


def input_value_texts(task: Task) -> list[str]:
    return [str(i.value) for a in task.calculator_answers for i in a.inputs]


def offline_task(tax: Taxonomy, reg: Registry, seed: int | str, index: int, **kw: Any) -> Task:
    """The offline (template) task for ``index``: composer, sampler, template question, plan header."""
    spec = make_spec(tax, reg, seed, index, **kw)
    rng = task_rng(seed, index + 10_000_019)
    calcs = [reg.get(s.calc_id) for s in spec.workflow.steps]
    issues = []
    for _ in range(5):  # templates are drawn at random: redraw on a rule break
        question = write_question(spec.workflow, spec.patient.executed, reg, rng, patient=spec.patient)
        task = to_task(spec, reg, question)
        issues = check_question(question, calcs, input_value_texts(task))
        if not issues:
            return task
    raise TaskCreationError(f"{spec.task_id}: question breaks the rules: {[(i.kind, i.text) for i in issues]}")
