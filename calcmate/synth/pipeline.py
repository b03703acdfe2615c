"""The synthesis pipeline behind ``data_gen/synthesize.py``.

Stages, each resumable (``calcmate.io.JsonlAppender`` keyed by task id) and sharded (``shard`` of
``num_shards`` processes split the task indices; every process writes its own files):

1. **tasks**: taxonomy category -> workflow -> patient -> question + planning header
   (templates offline, the planner LLM otherwise) -> ``DIR/tasks/tasks[.k-of-n].jsonl``
   (MedMCP-Calc format + ``plan``); decontamination drops tasks that overlap benchmark files;
   ``heldout_fraction`` of tasks go to ``DIR/heldout/tasks.jsonl`` for evaluation only.
2. **episodes**: patients are materialized (one database per batch of ``batch_size`` tasks) by
   the evaluator's own environment code; the teacher policy (scripted = the oracle, or an LLM
   executor) runs with real tools, ``concurrency`` episodes at a time; every trajectory is
   verified and retried with feedback up to ``max_retries`` times; one outcome record per task
   (kept or rejected with every reason) -> ``DIR/trajectories/trajectories[.k-of-n].jsonl``.
3. **export**: every kept trajectory of every shard -> ``DIR/dataset/train.jsonl`` + ``.parquet``.
4. **stats**: ``DIR/stats.json``, ``DIR/report.md``, ``DIR/synthesis_stats.png``.
"""

from __future__ import annotations

import asyncio
import glob
import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from calcmate.agent.backends.base import BackendConfig
from calcmate.agent.runner import ToolsSettings
from calcmate.io import JsonlAppender, atomic_write_json
from calcmate.synth.rewrite import RewriteConfig
from calcmate.tasks import CalcAnswer, Task

log = logging.getLogger(__name__)


class TeacherSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["scripted", "llm"] = "scripted"
    planner: dict[str, Any] | None = None  # calcmate.synth.teacher.EndpointConfig; None: template texts
    executor: BackendConfig | None = None  # kind: openai; None: the scripted teacher executes

    @property
    def name(self) -> str:
        if self.kind == "scripted" or self.executor is None:
            ex = "scripted"
        else:
            ex = self.executor.model or "executor"
        pl = (self.planner or {}).get("model", "templates")
        return f"planner={pl};executor={ex}"


class VerifySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rel_tol: float = Field(0.01, ge=0)
    name_threshold: float = Field(85.0, ge=0, le=100)


class ExportSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    render: Literal["native", "react_json"] = "native"
    tokenizer: str | None = None  # the training tokenizer (path or cached hub id) for exact counts; None: estimate
    split: str = "train"
    # rows longer than this (tokens under the chat template) are dropped and counted, never silently
    # truncated later by the trainer: set it to the training config's max_length
    max_length: int | None = Field(None, ge=1)


class SynthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_tasks: int = Field(50, ge=1)
    seed: int = 0
    taxonomy: str | None = None  # default: calcmate/synth/taxonomy.yaml
    min_calculators: int = Field(4, ge=1)
    max_calculators: int = Field(10, ge=1)
    domain_weights: dict[str, float] | None = None  # default: domains in turn
    heldout_fraction: float = Field(0.0, ge=0, lt=1)
    shard: int = Field(0, ge=0)
    num_shards: int = Field(1, ge=1)
    concurrency: int = Field(8, ge=1)  # episodes (and planner requests) in flight
    batch_size: int = Field(32, ge=1)  # tasks per materialized database
    max_retries: int = Field(1, ge=0)  # re-runs of a rejected trajectory, with feedback
    max_rounds: int = Field(400, ge=1)
    tool_timeout_s: float = Field(120, gt=0)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)  # transport, and format: official (default) | calcmate
    ehr_seed: int = 0
    ehr_dsn: str | None = None
    decontaminate: list[str] = Field(default_factory=list)  # benchmark task files to check against
    decontam_ngram: int = Field(8, ge=2)
    decontam_max_overlap: float = Field(0.1, gt=0, le=1)
    teacher: TeacherSettings = Field(default_factory=TeacherSettings)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    export: ExportSettings = Field(default_factory=ExportSettings)
    # optional LLM paraphrase of questions (before the episodes) and of thoughts and prose (at export);
    # a rewrite that changes a number, a unit, a name or a tool call is discarded and counted
    rewrite: RewriteConfig = Field(default_factory=RewriteConfig)
    progress: bool = True

    @model_validator(mode="after")
    def _check(self) -> "SynthConfig":
        if self.min_calculators > self.max_calculators:
            raise ValueError(f"min_calculators ({self.min_calculators}) > max_calculators ({self.max_calculators})")
        if self.shard >= self.num_shards:
            raise ValueError(f"shard ({self.shard}) must be < num_shards ({self.num_shards})")
        if self.teacher.kind == "llm" and self.teacher.executor is None and self.teacher.planner is None:
            raise ValueError("teacher.kind=llm needs teacher.planner and/or teacher.executor endpoints")
        return self


def _tag(cfg: SynthConfig) -> str:
    return f".{cfg.shard}-of-{cfg.num_shards}" if cfg.num_shards > 1 else ""


def _heldout(task_id: str, fraction: float) -> bool:
    return fraction > 0 and int(hashlib.sha1(task_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def _progress(enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled)


# -- stage 1: tasks ----------------------------------------------------------------------------------
async def create_tasks(cfg: SynthConfig, out: Path) -> list[Task]:
    """Every task of this shard (created now or on an earlier run), in index order."""
    from calcmate.calculators.registry import registry
    from calcmate.synth.build import TaskCreationError, input_value_texts, make_spec, offline_task, task_id_for, to_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    tax = load_taxonomy(cfg.taxonomy, reg)
    indices = [i for i in range(cfg.num_tasks) if i % cfg.num_shards == cfg.shard]
    kw = dict(min_calcs=cfg.min_calculators, max_calcs=cfg.max_calculators, domain_weights=cfg.domain_weights)
    client = None
    if cfg.teacher.kind == "llm" and cfg.teacher.planner:
        from calcmate.synth.teacher import EndpointConfig, PlannerClient

        client = PlannerClient(EndpointConfig.model_validate(cfg.teacher.planner))
    with JsonlAppender(out / "tasks" / f"tasks{_tag(cfg)}.jsonl", key="task_id") as app, \
            JsonlAppender(out / "tasks" / f"failures{_tag(cfg)}.jsonl", key="task_id") as fails:
        done = app.done_keys() | fails.done_keys()
        todo = [i for i in indices if task_id_for(cfg.seed, i) not in done]
        sem = asyncio.Semaphore(cfg.concurrency)

        rewriter = None
        if cfg.rewrite.enabled and "question" in cfg.rewrite.kinds:
            from calcmate.synth.rewrite import Rewriter

            rewriter = await Rewriter(cfg.rewrite).__aenter__()

        async def one(i: int) -> None:
            try:
                if client is None:
                    task = offline_task(tax, reg, cfg.seed, i, **kw)
                else:
                    from calcmate.synth.teacher import write_texts

                    spec = make_spec(tax, reg, cfg.seed, i, **kw)
                    draft = to_task(spec, reg, "")
                    async with sem:
                        q, header, problems = await write_texts(client, spec, reg, input_value_texts(draft))
                    task = to_task(spec, reg, q, header)
                    task.plan["planner_problems"] = problems
                if rewriter is not None:
                    task.fuzzy_question = await rewriter.rewrite_content(task.fuzzy_question, "question")
                app.append(task.model_dump(mode="json", exclude_none=True))
            except Exception as e:  # TaskCreationError, TeacherError, transport failures: recorded, not fatal
                kind = "creation" if isinstance(e, TaskCreationError) else type(e).__name__
                fails.append({"task_id": task_id_for(cfg.seed, i), "index": i, "error": kind, "detail": str(e)[:500]})

        with _progress(cfg.progress) as bar:
            bid = bar.add_task("creating tasks", total=len(indices), completed=len(indices) - len(todo))

            async def tracked(i: int) -> None:
                await one(i)
                bar.advance(bid)

            await asyncio.gather(*(tracked(i) for i in todo))
        if client is not None:
            await client.aclose()
        if rewriter is not None:
            atomic_write_json(out / "tasks" / f"rewrite{_tag(cfg)}.json", rewriter.stats.as_dict())
            await rewriter.__aexit__(None, None, None)
        order = {task_id_for(cfg.seed, i): i for i in indices}
        tasks = [Task.model_validate(r) for r in app.records() if r["task_id"] in order]
    return sorted(tasks, key=lambda t: order[t.task_id])


def strip_fed_inputs(task: Task) -> Task:
    """The task as the materializer sees it: inputs fed by an earlier calculator are not in the EHR."""
    t = task.model_copy(deep=True)
    t.calculator_answers = [
        CalcAnswer.model_validate({**a.model_dump(), "inputs": [i.model_dump() for i in a.inputs
                                                               if not str(getattr(i, "source", "") or "").startswith("calculator:")]})
        for a in t.calculator_answers]
    return t


# -- stage 2: episodes -------------------------------------------------------------------------------
def _make_policy(cfg: SynthConfig, backend: Any):
    if backend is None:
        from calcmate.synth.scripted import ScriptedTeacher

        return lambda: ScriptedTeacher()
    from calcmate.agent.policy import ModelPolicy

    shared = ModelPolicy(backend, name=f"teacher:{cfg.teacher.executor.model}")
    return lambda: shared


async def run_episodes(cfg: SynthConfig, out: Path, tasks: list[Task]) -> None:
    """Materialize, run, verify, retry; append one outcome record per task."""
    from calcmate.agent.episode import EpisodeConfig
    from calcmate.agent.runner import EhrSettings, EvalConfig, open_environment
    from calcmate.agent.tools import toolset_specs

    with JsonlAppender(out / "trajectories" / f"trajectories{_tag(cfg)}.jsonl", key="task_id") as app:
        done = app.done_keys()
        todo = [t for t in tasks if t.task_id not in done]
        if not todo:
            return
        backend = None
        if cfg.teacher.kind == "llm" and cfg.teacher.executor is not None:
            from calcmate.agent.backends.base import make_backend

            backend = make_backend(cfg.teacher.executor)
        make_policy = _make_policy(cfg, backend)
        ecfg = EpisodeConfig(cfg.max_rounds, 5, cfg.tool_timeout_s)
        sem = asyncio.Semaphore(cfg.concurrency)
        env_cfg = EvalConfig(ehr=EhrSettings(dsn=cfg.ehr_dsn, seed=cfg.ehr_seed), tools=cfg.tools)
        try:
            with _progress(cfg.progress) as bar:
                bid = bar.add_task("running + verifying episodes", total=len(tasks), completed=len(tasks) - len(todo))
                for start in range(0, len(todo), cfg.batch_size):
                    batch = todo[start:start + cfg.batch_size]
                    async with open_environment(env_cfg, [strip_fed_inputs(t) for t in batch]) as (tools, reports):
                        specs = await toolset_specs(tools)
                        atomic_write_json(out / "tools.json", [s.openai_schema() for s in specs])

                        async def one(task: Task) -> None:
                            try:
                                rec = await _attempt_task(cfg, task, make_policy, tools, specs, ecfg, sem,
                                                          {"materialized": reports.get(task.task_id)}, backend)
                            except Exception as e:  # noqa: BLE001 - one task's failure is its outcome, never the run's end
                                log.warning("task %s failed: %s: %s", task.task_id, type(e).__name__, e)
                                rec = {"task_id": task.task_id, "status": "rejected", "attempts": 1, "teacher": cfg.teacher.name,
                                       "rejections": [{"attempt": 1, "reason": "error", "detail": f"{type(e).__name__}: {e}"[:500]}]}
                            app.append(rec)
                            bar.advance(bid)

                        await asyncio.gather(*(one(t) for t in batch))
        finally:
            if backend is not None:
                await backend.aclose()


async def _attempt_task(cfg: SynthConfig, task: Task, make_policy: Any, tools: Any, specs: Any, ecfg: Any,
                        sem: asyncio.Semaphore, context: dict[str, Any], backend: Any) -> dict[str, Any]:
    """Run and verify one task, retrying with the reviewer's feedback; the task's outcome record."""
    from calcmate.agent.episode import run_episode
    from calcmate.agent.protocols import NATIVE_SYSTEM_PROMPT, NativeProtocol
    from calcmate.synth.teacher import executor_retry_prompt
    from calcmate.synth.verify import verify

    rejections: list[dict[str, Any]] = []
    verdict, kept, attempts = None, None, 0
    for attempt in range(1, cfg.max_retries + 2):
        attempts = attempt
        # a retry sees the verifier's process-only feedback (never names, values or results), and a
        # kept retry is exported with exactly this prompt
        prompt = NATIVE_SYSTEM_PROMPT if verdict is None else executor_retry_prompt(NATIVE_SYSTEM_PROMPT, verdict)
        async with sem:
            traj = await run_episode(task, make_policy(), tools, NativeProtocol(prompt), ecfg, specs=specs, context=context)
        # in the loop's own thread: verify parses programs with ``ast``, and CPython 3.11's AST
        # constructor is not safe to run in several threads at once (a SystemError on a 1,000-task run)
        verdict = verify(task, traj, cfg.verify.rel_tol, cfg.verify.name_threshold)
        if verdict.ok:
            kept = traj
            break
        rejections += [{"attempt": attempt, **i.as_dict()} for i in verdict.issues]
        if backend is None and not any(c.is_error for c in traj.tool_calls):
            break  # the scripted teacher is deterministic: only a failed tool call is worth a retry
    rec: dict[str, Any] = {"task_id": task.task_id, "status": "kept" if kept else "rejected",
                           "attempts": attempts, "rejections": rejections, "teacher": cfg.teacher.name}
    if kept is not None:
        rec["trajectory"] = kept.model_dump(mode="json")
    return rec


# -- stages 3 and 4: export and statistics -----------------------------------------------------------
def _all_records(out: Path, pattern: str) -> list[dict[str, Any]]:
    recs: dict[str, dict[str, Any]] = {}
    for f in sorted(glob.glob(str(out / pattern))):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a torn last line of a shard still running
                    recs[r["task_id"]] = r
    return list(recs.values())


def export_and_report(cfg: SynthConfig, out: Path, decontam_hits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    from calcmate.agent.trajectory import Trajectory
    from calcmate.calculators.registry import registry
    from calcmate.synth.export import export_row, write_dataset
    from calcmate.synth.stats import write_report

    tasks = {r["task_id"]: Task.model_validate(r) for r in _all_records(out, "tasks/tasks*.jsonl")}
    records = _all_records(out, "trajectories/trajectories*.jsonl")
    tools = json.loads((out / "tools.json").read_text()) if (out / "tools.json").exists() else []
    rows = []
    for rec in sorted(records, key=lambda r: r["task_id"]):
        if rec.get("status") != "kept" or rec["task_id"] not in tasks:
            continue
        traj = Trajectory.model_validate(rec["trajectory"])  # exported as it ran, retry feedback included
        rows.append(export_row(tasks[rec["task_id"]], traj, tools, teacher=rec.get("teacher", cfg.teacher.name),
                               render=cfg.export.render, tokenizer=cfg.export.tokenizer, attempts=rec.get("attempts", 1)))
    rewrite_stats = None
    if rows and cfg.rewrite.enabled and {"thought", "prose"} & set(cfg.rewrite.kinds):
        import concurrent.futures

        from calcmate.synth.export import count_tokens
        from calcmate.synth.rewrite import rewrite_conversations

        with concurrent.futures.ThreadPoolExecutor(1) as ex:  # its own event loop: we may be inside one
            convs, st = ex.submit(rewrite_conversations, [r["messages"] for r in rows], cfg.rewrite).result()
        for r, msgs in zip(rows, convs):
            r["messages"] = msgs
            r["num_tokens"], r["token_count_method"] = count_tokens(msgs, json.loads(r["tools"]) or None, cfg.export.tokenizer)
        rewrite_stats = st.as_dict()
    over = [r for r in rows if cfg.export.max_length and r["num_tokens"] > cfg.export.max_length]
    if over:
        method = over[0]["token_count_method"]
        log.warning("export: %d of %d rows exceed max_length=%d tokens (%s) and are dropped: %s", len(over), len(rows),
                    cfg.export.max_length, "counted with the tokenizer" if method == "tokenizer" else "estimated",
                    ", ".join(r["id"] for r in over[:5]) + (" ..." if len(over) > 5 else ""))
        rows = [r for r in rows if r not in over]
    paths = write_dataset(rows, out / "dataset", cfg.export.split)
    failures = _all_records(out, "tasks/failures*.jsonl")
    outcome = [*records, *({"task_id": f["task_id"], "status": f"creation_failed:{f['error']}", "attempts": 0} for f in failures)]
    stats = write_report(rows, outcome, out, n_registry=len(registry()), decontam=decontam_hits,
                         extra={"dataset": {k: str(v) for k, v in paths.items()}, "config": cfg.model_dump(mode="json"),
                                "rewrite": rewrite_stats,
                                "over_length": {"max_length": cfg.export.max_length, "dropped": len(over),
                                                "ids": [r["id"] for r in over],
                                                "method": over[0]["token_count_method"] if over else None}})
    return stats


async def synthesize_async(cfg: SynthConfig, out: Path) -> dict[str, Any]:
    from calcmate.synth.decontam import Decontaminator
    from calcmate.tasks import write_tasks

    out.mkdir(parents=True, exist_ok=True)
    tasks = await create_tasks(cfg, out)
    hits: list[dict[str, Any]] = []
    if cfg.decontaminate:
        dc = Decontaminator.from_files(cfg.decontaminate, n=cfg.decontam_ngram, max_overlap=cfg.decontam_max_overlap)
        bad: set[str] = set()
        for t in tasks:
            for h in dc.check(t):
                hits.append(h.__dict__)
                bad.add(t.task_id)
        tasks = [t for t in tasks if t.task_id not in bad]
        atomic_write_json(out / f"decontamination{_tag(cfg)}.json", {"files": cfg.decontaminate, "dropped": sorted(bad), "hits": hits})
    heldout = [t for t in tasks if _heldout(t.task_id, cfg.heldout_fraction)]
    if heldout:
        write_tasks(heldout, out / "heldout" / f"tasks{_tag(cfg)}.jsonl")
    train = [t for t in tasks if not _heldout(t.task_id, cfg.heldout_fraction)]
    await run_episodes(cfg, out, train)
    return export_and_report(cfg, out, hits if cfg.decontaminate else None)


def synthesize(cfg: SynthConfig, out: str | Path) -> dict[str, Any]:
    return asyncio.run(synthesize_async(cfg, Path(out)))
