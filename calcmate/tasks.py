"""The task record: MedMCP-Calc's ``tasks.jsonl`` format, read and written.

Benchmark tasks and synthesized tasks share this shape, so the evaluator can score either.
Synthesized tasks add plan metadata under ``plan`` (ignored by the benchmark's own tools).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calcmate.domains import Domain


class CalcInput(BaseModel):
    """One ground-truth input: free-text ``field``, ``value`` with units, optional ``score`` (points)."""

    model_config = ConfigDict(extra="allow")
    field: str
    value: Any
    score: Any | None = None


class CalcAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")
    order: int
    name: str
    inputs: list[CalcInput] = Field(default_factory=list)
    final_answer: Any = None
    notes: str | None = None


class Task(BaseModel):
    model_config = ConfigDict(extra="allow")
    task_id: str
    task_scenario: str = ""
    task_category: str = ""
    patient_id: str = ""
    task_description: str = ""  # the explicit plan: never shown to the agent
    fuzzy_question: str
    required_calculators: list[str] = Field(default_factory=list)
    calculator_answers: list[CalcAnswer] = Field(default_factory=list)
    plan: dict[str, Any] | None = None  # synthesizer metadata: branches, dependencies

    @property
    def domain(self) -> Domain | None:
        try:
            return Domain.from_category(self.task_category)
        except ValueError:
            return None


def read_tasks(path: str | Path) -> list[Task]:
    """Load a tasks.jsonl; errors name the line."""
    out: list[Task] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(Task.model_validate_json(line))
            except Exception as e:  # pydantic ValidationError or JSON error
                raise ValueError(f"{path}:{n}: not a valid task: {e}") from None
    return out


def write_tasks(tasks: Iterable[Task], path: str | Path) -> None:
    from calcmate.io import atomic_write_text

    atomic_write_text(path, "".join(t.model_dump_json(exclude_none=True) + "\n" for t in tasks))
