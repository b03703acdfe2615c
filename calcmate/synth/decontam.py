"""Decontamination: no synthesized task may reuse a benchmark question or patient.

* **Questions:** word n-gram overlap (default n=8) between a synthesized task's fuzzy question and
  task description, and every benchmark task's question and description. A task is contaminated
  when the share of its n-grams found in the benchmark reaches ``max_overlap``.
* **Patients:** the (calculator, input field, value) triples of a synthesized task against each
  benchmark task's; a task is contaminated when it reproduces ``max_patient_share`` or more of one
  benchmark task's inputs, or the complete inputs (three or more) of any one benchmark calculator answer.

Contaminated tasks are dropped by the pipeline and listed in the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from calcmate.calculators.spec import normalize_name
from calcmate.tasks import Task, read_tasks


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = normalize_name(text).split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _triples(task: Task) -> list[set[tuple[str, str, str]]]:
    return [{(normalize_name(a.name), normalize_name(i.field), normalize_name(str(i.value))) for i in a.inputs}
            for a in task.calculator_answers]


@dataclass
class Hit:
    task_id: str
    kind: str  # "question" | "patient"
    benchmark_task: str
    score: float


@dataclass
class Decontaminator:
    reference: list[Task]
    n: int = 8
    max_overlap: float = 0.1
    max_patient_share: float = 0.5
    _grams: dict[tuple[str, ...], str] = field(default_factory=dict, init=False)
    _patients: list[tuple[str, set, list[set]]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        for t in self.reference:
            for g in ngrams(f"{t.fuzzy_question}\n{t.task_description}", self.n):
                self._grams.setdefault(g, t.task_id)
            per_calc = [s for s in _triples(t) if s]
            self._patients.append((t.task_id, set().union(*per_calc) if per_calc else set(), per_calc))

    @classmethod
    def from_files(cls, paths: Iterable[str | Path], **kw) -> "Decontaminator":
        ref: list[Task] = []
        for p in paths:
            ref.extend(read_tasks(p))
        return cls(ref, **kw)

    def check(self, task: Task) -> list[Hit]:
        hits: list[Hit] = []
        grams = ngrams(f"{task.fuzzy_question}\n{task.task_description}", self.n)
        if grams:
            shared = [self._grams[g] for g in grams if g in self._grams]
            share = len(shared) / len(grams)
            if shared and share >= self.max_overlap:
                hits.append(Hit(task.task_id, "question", max(set(shared), key=shared.count), round(share, 4)))
        mine = set().union(*_triples(task)) if task.calculator_answers else set()
        for ref_id, all_triples, per_calc in self._patients:
            if not all_triples:
                continue
            share = len(mine & all_triples) / len(all_triples)
            full_calc = any(len(s) >= 3 and s <= mine for s in per_calc)
            if share >= self.max_patient_share or full_calc:
                hits.append(Hit(task.task_id, "patient", ref_id, round(share, 4)))
                break
        return hits

    def max_question_overlap(self, task: Task) -> float:
        grams = ngrams(f"{task.fuzzy_question}\n{task.task_description}", self.n)
        return sum(g in self._grams for g in grams) / len(grams) if grams else 0.0
