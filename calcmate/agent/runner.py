"""Evaluate a policy on MedMCP-Calc-format tasks: materialize patients, run episodes with
bounded concurrency, append each trajectory as it finishes (resumable), then score and report.

``eval/evaluate.py`` and ``eval/sweep.py`` are thin wrappers over ``evaluate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calcmate.agent.backends.base import BackendConfig, make_backend
from calcmate.agent.episode import EpisodeConfig, run_episode
from calcmate.agent.oracle import OraclePolicy, Perturbation
from calcmate.agent.policy import ModelPolicy, Policy
from calcmate.agent.protocols import get_protocol
from calcmate.agent.tools import ToolSet, toolset_specs
from calcmate.agent.trajectory import Trajectory
from calcmate.io import JsonlAppender, atomic_write_json
from calcmate.scoring.extract import JudgeConfig
from calcmate.tasks import Task, read_tasks


class EpisodeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_rounds: int = Field(80, ge=1)
    max_format_retries: int = Field(5, ge=0)
    tool_timeout_s: float = Field(120, gt=0)


class ToolsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transport: Literal["in_process", "stdio"] = "in_process"
    # what the model sees: the official MedMCP-Calc servers' names and observations, or CalcMate's richer ones
    format: Literal["official", "calcmate"] = "official"


class EhrSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dsn: str | None = None  # an official MedMCP-Calc database: used as is, nothing materialized
    # or a directory of the official dump (<table>.csv.gz): loaded into this run's embedded database
    # (no PostgreSQL server needed), nothing materialized
    dump: str | None = None
    seed: int = 0  # materializer seed
    database: str | None = None  # name of the database to (re)create; default derived from the run


class ScoringSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fuzzy_threshold: float = Field(85.0, ge=0, le=100)
    rel_tol: float = Field(0.05, ge=0)
    judge: JudgeConfig | None = None


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None  # run name in reports; default: the model or policy
    tasks: str | None = None
    limit: int | None = Field(None, ge=1)
    policy: Literal["model", "oracle"] = "model"
    protocol: Literal["native", "react_json"] = "native"
    concurrency: int = Field(8, ge=1)  # episodes in flight
    backend: BackendConfig = Field(default_factory=BackendConfig)
    episode: EpisodeSettings = Field(default_factory=EpisodeSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    ehr: EhrSettings = Field(default_factory=EhrSettings)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    perturb: Perturbation = Field(default_factory=Perturbation)

    def run_name(self) -> str:
        if self.name:
            return self.name
        if self.policy == "oracle":
            return OraclePolicy(self.perturb).name
        return Path(self.backend.model or "model").name


# -- per-task failures ---------------------------------------------------------------------------
class TaskFailure(BaseModel):
    """Why one task has no real episode: its patient could not be materialized, or its episode crashed
    outside the episode loop. Recorded in the task's trajectory (``metadata["failure"]``) and counted in
    ``scores.json`` (``failures``); the run goes on with the other tasks."""

    stage: Literal["materialize", "episode"]
    reason: str


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:500]


def failure_trajectory(task: Task, failure: TaskFailure, policy: str) -> Trajectory:
    """The record of a task that did not run: no answer, ``stop_reason`` and ``metadata`` say why."""
    return Trajectory(task_id=task.task_id, policy=policy,
                      stop_reason=f"error: {failure.stage}: {failure.reason}"[:500],
                      metadata={"failure": failure.model_dump()})


def record_failure(record: dict[str, Any]) -> dict[str, Any] | None:
    """The failure recorded in a trajectory record, or None for a task that ran."""
    f = (record.get("metadata") or {}).get("failure")
    return f if isinstance(f, dict) else None


def failures_summary(tasks: list[Task], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``scores.json["failures"]``: how many tasks failed before or outside their episode, by stage, and why."""
    items = [{"task_id": t.task_id, **f} for t in tasks if t.task_id in records
             and (f := record_failure(records[t.task_id])) is not None]
    by_stage: dict[str, int] = {}
    for f in items:
        by_stage[f["stage"]] = by_stage.get(f["stage"], 0) + 1
    return {"count": len(items), "by_stage": by_stage, "tasks": items}


# -- environment -------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def open_environment(cfg: EvalConfig, tasks: list[Task]) -> AsyncIterator[tuple[ToolSet, dict[str, Any]]]:
    """The tools over the patients' database, and each task's materialization report."""
    from calcmate.tools.toolbox import Toolbox

    reports: dict[str, Any] = {}
    db = server = None
    if cfg.ehr.dsn:
        dsn = cfg.ehr.dsn
    elif cfg.ehr.dump:
        from calcmate.ehr import get_server
        from calcmate.ehr.loader import load_dump

        server = get_server()
        db = server.create_database(cfg.ehr.database or "eval_dump_" + hashlib.sha1(str(cfg.ehr.dump).encode()).hexdigest()[:12])
        load_dump(db, cfg.ehr.dump)
        dsn = db.ro_dsn
    else:
        from calcmate.ehr import get_server
        from calcmate.ehr.materialize import materialize

        server = get_server()
        ids = ",".join(sorted(t.task_id for t in tasks))
        name = cfg.ehr.database or "eval_" + hashlib.sha1(f"{ids}:{cfg.ehr.seed}".encode()).hexdigest()[:16]
        db = server.create_database(name)
        with db.connect() as conn:
            for t in tasks:  # one task's patient failing never stops the others
                try:
                    reports[t.task_id] = materialize(t, conn, seed=cfg.ehr.seed)
                except Exception as e:  # noqa: BLE001 - any materializer bug is this task's failure
                    reports[t.task_id] = TaskFailure(stage="materialize", reason=_reason(e))
        dsn = db.ro_dsn
    fmt = cfg.tools.format
    tb = Toolbox.stdio(dsn=dsn, fmt=fmt) if cfg.tools.transport == "stdio" else Toolbox.in_process(dsn=dsn, fmt=fmt)
    try:
        async with tb.session() as session:
            yield session, reports
    finally:
        tb.close()
        if db is not None and server is not None:
            server.drop_database(db.name)


# -- running -----------------------------------------------------------------------------------
def trajectory_record(traj: Trajectory) -> dict[str, Any]:
    return traj.model_dump(mode="json")


async def run_tasks(
    tasks: list[Task], make_policy: Callable[[Task], Policy], tools: ToolSet, cfg: EvalConfig,
    reports: dict[str, Any], on_done: Callable[[Trajectory], None], progress: Any = None,
) -> None:
    """Run every task's episode, ``cfg.concurrency`` at a time; ``on_done`` sees each as it ends."""
    protocol = get_protocol(cfg.protocol)
    specs = await toolset_specs(tools)
    ecfg = EpisodeConfig(cfg.episode.max_rounds, cfg.episode.max_format_retries, cfg.episode.tool_timeout_s)
    sem = asyncio.Semaphore(cfg.concurrency)

    async def one(task: Task) -> None:
        report = reports.get(task.task_id)
        if isinstance(report, TaskFailure):  # no patient in the database: the episode would be meaningless
            traj = failure_trajectory(task, report, _policy_name(make_policy, task))
        else:
            try:
                async with sem:
                    traj = await run_episode(task, make_policy(task), tools, protocol, ecfg, specs=specs,
                                             context={"materialized": report})
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - a crash outside the episode loop fails this task only
                traj = failure_trajectory(task, TaskFailure(stage="episode", reason=_reason(e)),
                                          _policy_name(make_policy, task))
        on_done(traj)
        if progress is not None:
            progress()

    await asyncio.gather(*(one(t) for t in tasks))


def _policy_name(make_policy: Callable[[Task], Policy], task: Task) -> str:
    try:
        return make_policy(task).name
    except Exception:  # noqa: BLE001 - the policy itself may be what failed
        return "unknown"


def policy_factory(cfg: EvalConfig) -> tuple[Callable[[Task], Policy], Any]:
    if cfg.policy == "oracle":
        return (lambda task: OraclePolicy(cfg.perturb)), None
    backend = make_backend(cfg.backend)
    shared = ModelPolicy(backend, name=cfg.run_name())
    return (lambda task: shared), backend


async def evaluate_async(cfg: EvalConfig, out_dir: Path, *, show_progress: bool = True) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not cfg.tasks:
        raise ValueError("tasks: a tasks.jsonl path is required (or pass --tasks)")
    tasks = read_tasks(cfg.tasks)[: cfg.limit] if cfg.limit else read_tasks(cfg.tasks)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_dir / "config.json", cfg.model_dump(mode="json"))
    with JsonlAppender(out_dir / "trajectories.jsonl", key="task_id") as app:
        # a task whose patient could not be materialized is tried again on a rerun (the materializer may
        # have been fixed); its new record supersedes the failure (records are read last-wins)
        latest = {r["task_id"]: r for r in app.records()}
        done = {k for k, r in latest.items() if (record_failure(r) or {}).get("stage") != "materialize"}
        todo = [t for t in tasks if t.task_id not in done]
        if todo:
            make_policy, backend = policy_factory(cfg)
            try:
                with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), disable=not show_progress) as bar:
                    bar_id = bar.add_task(f"evaluating {cfg.run_name()}", total=len(tasks), completed=len(tasks) - len(todo))
                    async with open_environment(cfg, todo) as (tools, reports):
                        await run_tasks(todo, make_policy, tools, cfg, reports, lambda tr: app.append(trajectory_record(tr)),
                                        lambda: bar.advance(bar_id))
            finally:
                if backend is not None:
                    await backend.aclose()
        records = {r["task_id"]: r for r in app.records()}
    return await score_run(tasks, records, cfg, out_dir)


async def score_run(tasks: list[Task], records: dict[str, dict[str, Any]], cfg: EvalConfig, out_dir: Path) -> dict[str, Any]:
    """Score every task (a task without a trajectory scores 0) and write scores.json + report."""
    from calcmate.report import write_report
    from calcmate.scoring.extract import extract_all
    from calcmate.scoring.metrics import aggregate, score_task

    trajs = [Trajectory.model_validate(records[t.task_id]) if t.task_id in records else None for t in tasks]
    # the judge (if configured) is told each task's calculator names, never their values
    extractions = await extract_all([(tr, [a.name for a in t.calculator_answers] or t.required_calculators)
                                     for t, tr in zip(tasks, trajs)], cfg.scoring.judge)
    per_task = [score_task(t, tr, ex.items, ex.how, cfg.scoring.fuzzy_threshold, cfg.scoring.rel_tol)
                for t, tr, ex in zip(tasks, trajs, extractions)]
    scores = aggregate(per_task)
    scores["run"] = {"name": cfg.run_name(), "policy": cfg.policy, "protocol": cfg.protocol,
                     "model": cfg.backend.model if cfg.policy == "model" else None,
                     "tasks": cfg.tasks, "missing_trajectories": sum(1 for t in tasks if t.task_id not in records)}
    # tasks that failed before or outside their episode: scored 0 like any unanswered task, counted here with why
    scores["failures"] = failures_summary(tasks, records)
    scores["run"]["failed_tasks"] = scores["failures"]["count"]
    if cfg.policy == "oracle":  # the oracle computes only through the registry and the tools: how much could it?
        items = [i for tr in trajs if tr is not None for i in (tr.final_answer or [])]
        n_answers = sum(len(t.calculator_answers) for t in tasks)
        computed = sum(i.value is not None for i in items)
        scores["coverage"] = {"computed": computed, "answers": n_answers,
                              "share": round(100.0 * computed / n_answers, 2) if n_answers else 0.0,
                              "note": "answers the oracle computed through the registry and the tools / all answers; "
                                      "CS is given to the oracle (it is told which calculators the task asks for)"}
    scores["per_task"] = [{**s.model_dump(), **({"extraction_error": ex.error} if ex.error else {})}
                          for s, ex in zip(per_task, extractions)]
    atomic_write_json(out_dir / "scores.json", scores)
    judge = cfg.scoring.judge
    failed = scores["failures"]
    write_report(out_dir, scores, cfg.run_name(), notes=(
        "Scores are computed deterministically (structured final-answer block, registry/fuzzy name "
        "matching, tolerance rules)" + (f"; free-text answers were read by the LLM judge {judge.model}" if judge else "")
        + "; see docs/scoring.md for how they differ from the official LLM-judged scores.\n"
        + (f"\n{failed['count']} task(s) failed before or outside their episode and score 0 "
           "(`failures` in scores.json):\n" + "".join(f"- `{f['task_id']}` ({f['stage']}): {f['reason']}\n"
                                                     for f in failed["tasks"]) if failed["count"] else "")))
    return scores


def evaluate(cfg: EvalConfig, out_dir: Path, *, show_progress: bool = True) -> dict[str, Any]:
    return asyncio.run(evaluate_async(cfg, Path(out_dir), show_progress=show_progress))
