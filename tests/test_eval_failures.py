"""One bad task never aborts an evaluation run (issue 13, item 7).

A task whose patient the materializer cannot build, or whose episode crashes outside the episode loop,
is recorded in trajectories.jsonl with the reason, scored 0, counted in scores.json's ``failures`` and
named in report.md; every other task is evaluated as usual.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calcmate.agent.runner as runner
import calcmate.ehr.materialize as materialize_mod
from calcmate.agent.runner import EvalConfig, evaluate
from calcmate.tasks import read_tasks

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"
N = 3


# the stages' own server (calcmate.ehr.get_server) is this session's
pytestmark = pytest.mark.usefixtures("shared_server")


def _run(out: Path, **kw):
    cfg = EvalConfig.model_validate({"tasks": str(DEV), "policy": "oracle", "concurrency": 2, "limit": N, **kw})
    return evaluate(cfg, out, show_progress=False)


def _records(out: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in map(json.loads, (out / "trajectories.jsonl").read_text().splitlines())}


def test_a_task_the_materializer_cannot_build_is_recorded_and_the_others_run(tmp_path, monkeypatch):
    tasks = read_tasks(DEV)[:N]
    bad = tasks[1].task_id
    real = materialize_mod.materialize

    def flaky(task, conn, *a, **kw):
        if task.task_id == bad:  # what the "<1 month" age band did: an empty random range
            raise ValueError("empty range for randrange() (18, 1, -17)")
        return real(task, conn, *a, **kw)

    monkeypatch.setattr(materialize_mod, "materialize", flaky)
    out = tmp_path / "run"
    scores = _run(out)

    recs = _records(out)
    assert set(recs) == {t.task_id for t in tasks}  # every task has its line
    failed = recs[bad]
    assert failed["metadata"]["failure"] == {"stage": "materialize",
                                             "reason": "ValueError: empty range for randrange() (18, 1, -17)"}
    assert failed["stop_reason"].startswith("error: materialize: ValueError") and not failed["finished"]
    assert not failed["tool_calls"]  # no episode against a patient that is not there
    for t in tasks:
        if t.task_id != bad:
            assert recs[t.task_id]["finished"] and "failure" not in recs[t.task_id]["metadata"]

    assert scores["failures"]["count"] == 1 and scores["failures"]["by_stage"] == {"materialize": 1}
    assert scores["failures"]["tasks"][0]["task_id"] == bad and "randrange" in scores["failures"]["tasks"][0]["reason"]
    assert scores["run"]["failed_tasks"] == 1 and scores["overall"]["n_tasks"] == N
    per = {p["task_id"]: p for p in scores["per_task"]}
    assert per[bad]["qp"] == 0 and not per[bad]["tf"]
    # the other tasks ran their episodes as usual (their scores are the oracle's business, not this test's)
    assert all(per[t.task_id]["rounds"] > 0 for t in tasks if t.task_id != bad) and per[bad]["rounds"] == 0
    assert json.loads((out / "scores.json").read_text())["failures"]["count"] == 1
    assert bad in (out / "report.md").read_text()

    # a rerun (materializer fixed) retries the failed task only; its new record supersedes the failure
    monkeypatch.setattr(materialize_mod, "materialize", real)
    again = _run(out)
    assert again["failures"]["count"] == 0 and again["run"]["failed_tasks"] == 0
    assert {p["task_id"]: p for p in again["per_task"]}[bad]["rounds"] > 0
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == N + 1 and json.loads(lines[-1])["task_id"] == bad


def test_an_episode_that_crashes_fails_only_its_task(tmp_path, monkeypatch):
    tasks = read_tasks(DEV)[:N]
    bad = tasks[0].task_id
    real = runner.run_episode

    async def crashing(task, *a, **kw):
        if task.task_id == bad:
            raise RuntimeError("tool server went away")
        return await real(task, *a, **kw)

    monkeypatch.setattr(runner, "run_episode", crashing)
    out = tmp_path / "run"
    scores = _run(out)
    recs = _records(out)
    assert recs[bad]["metadata"]["failure"] == {"stage": "episode", "reason": "RuntimeError: tool server went away"}
    assert scores["failures"]["by_stage"] == {"episode": 1} and scores["overall"]["n_tasks"] == N
    assert all(recs[t.task_id]["finished"] for t in tasks if t.task_id != bad)


def test_the_cli_reports_failed_tasks_and_exits_0(tmp_path, monkeypatch, capsys):
    import importlib.util
    import sys

    tasks = read_tasks(DEV)[:2]
    bad = tasks[0].task_id
    real = materialize_mod.materialize

    def flaky(task, conn, *a, **kw):
        if task.task_id == bad:
            raise ValueError("impossible input")
        return real(task, conn, *a, **kw)

    monkeypatch.setattr(materialize_mod, "materialize", flaky)
    spec = importlib.util.spec_from_file_location("eval_evaluate_failures", ROOT / "eval" / "evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    rc = mod.main(["--config", str(ROOT / "configs" / "eval" / "oracle.yaml"), "--tasks", str(DEV),
                   "--out", str(tmp_path / "cli"), "--limit", "2", "--quiet"])
    assert rc == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out.splitlines()[0])["failed_tasks"] == 1
    assert f"task {bad} failed (materialize): ValueError: impossible input" in cap.err
