"""End to end: offline synthesis of ~20 tasks through embedded PostgreSQL and the real MCP tools.

data_gen/synthesize.py with the scripted teacher (the evaluator's oracle policy): tasks are
composed, patients materialized, episodes run and verified, the dataset exported; a rerun resumes
without redoing or duplicating anything, and a crash in the middle loses nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"
pytest.importorskip("calcmate.ehr.materialize", reason="the patient materializer (EHR issue) has not landed")
sys.path.insert(0, str(ROOT / "data_gen"))

import synthesize  # noqa: E402  (data_gen/synthesize.py, the recipe under test)

from calcmate.agent.trajectory import Trajectory  # noqa: E402
from calcmate.synth.verify import verify  # noqa: E402
from calcmate.tasks import Task, read_tasks  # noqa: E402

N = 20


# the stages' own server (calcmate.ehr.get_server) is this session's
pytestmark = pytest.mark.usefixtures("shared_server")


def lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    rc = synthesize.main(["--config", str(ROOT / "configs/synth/offline.yaml"), "--out", str(out), "--quiet",
                          "--set", f"num_tasks={N}", "batch_size=8", "concurrency=4", "heldout_fraction=0.1",
                          "--decontaminate", str(DEV)])
    assert rc == 0
    return out


def test_stats_count_every_task(run_dir):
    stats = json.loads((run_dir / "stats.json").read_text())
    tasks = lines(run_dir / "tasks" / "tasks.jsonl")
    heldout = read_tasks(run_dir / "heldout" / "tasks.jsonl") if (run_dir / "heldout" / "tasks.jsonl").exists() else []
    failures = lines(run_dir / "tasks" / "failures.jsonl")
    assert len(tasks) + len(failures) == N
    recs = lines(run_dir / "trajectories" / "trajectories.jsonl")
    assert len(recs) == len(tasks) - len(heldout) - stats["decontamination"]["dropped"]
    kept = [r for r in recs if r["status"] == "kept"]
    assert stats["trajectories_kept"] == len(kept)
    assert stats["tasks_attempted"] == len(recs) + len(failures)
    assert sum(stats["rejected_by_reason"].values()) >= len(recs) - len(kept)
    assert len(kept) >= 0.8 * len(recs), stats["rejected_by_reason"]  # the oracle teacher is right
    assert stats["decontamination"]["dropped"] == 0  # nothing synthesized overlaps the benchmark
    for k in ("sql", "python", "search", "fetch"):
        assert stats["averages"]["tool_calls"][k] > 0
    assert (run_dir / "report.md").read_text().count("paper CalcMate-4B") == 1
    assert (run_dir / "synthesis_stats.png").stat().st_size > 10_000


def test_kept_trajectories_are_verified_and_use_the_tools(run_dir):
    tasks = {t["task_id"]: Task.model_validate(t) for t in lines(run_dir / "tasks" / "tasks.jsonl")}
    for r in lines(run_dir / "trajectories" / "trajectories.jsonl"):
        if r["status"] != "kept":
            assert r["rejections"] and all(x["reason"] for x in r["rejections"])
            continue
        task, traj = tasks[r["task_id"]], Trajectory.model_validate(r["trajectory"])
        assert verify(task, traj).ok
        n = len(task.calculator_answers)
        assert len(traj.calls("search")) >= n and len(traj.calls("fetch")) >= n and len(traj.calls("run_python")) >= n
        assert traj.calls("run_read_only_sql") and traj.calls("describe_tables") and not traj.calls("run_sql")
        # the branch thought: after the decider's result, a thought names the arm that comes next
        for b in task.plan["branches"]:
            dec = next(a for a in task.calculator_answers if a.calculator_id == b["decider"])
            i = next(k for k, c in enumerate(traj.tool_calls) if c.tool == "run_python" and dec.name in c.arguments["code"])
            later = [m.get("content") or "" for m in traj.messages if m["role"] == "assistant"]
            arm = b["then"] if b["taken"] == "then" else b["else"]
            from calcmate.calculators.registry import registry
            names = [registry().get(c).name for c in arm] or ["no further calculator on this arm"]
            assert any(dec.name in t and all(n in t for n in names) for t in later), (b, i)


def test_dataset_is_trl_ready(run_dir):
    from datasets import load_dataset

    from calcmate.training.tiny import build_tokenizer

    kept = [r for r in lines(run_dir / "trajectories" / "trajectories.jsonl") if r["status"] == "kept"]
    heldout = {t.task_id for t in read_tasks(run_dir / "heldout" / "tasks.jsonl")} if (run_dir / "heldout" / "tasks.jsonl").exists() else set()
    ds = load_dataset("parquet", data_files=str(run_dir / "dataset" / "train.parquet"), split="train")
    assert len(ds) == len(kept) and not heldout & set(ds["id"])
    tok = build_tokenizer()
    row = ds[0]
    first = row["messages"][2]
    assert first["role"] == "assistant" and first["tool_calls"] and len(first["content"]) > 500  # the plan opens it
    text = tok.apply_chat_template(row["messages"], tools=json.loads(row["tools"]), tokenize=False)
    assert "<tools>" in text and "<tool_call>" in text and "<final_answer>" in text
    assert set(json.loads(row["tools"])[0]) == {"type", "function"}


def test_rerun_resumes_without_duplicates_and_recovers_a_crash(run_dir):
    traj_file = run_dir / "trajectories" / "trajectories.jsonl"
    before = lines(traj_file)
    # simulate a crash: the last two outcome records were never written and the last line is torn
    kept_lines = traj_file.read_text().splitlines(keepends=True)
    traj_file.write_text("".join(kept_lines[:-2]) + kept_lines[-2][: len(kept_lines[-2]) // 2])
    rc = synthesize.main(["--config", str(ROOT / "configs/synth/offline.yaml"), "--out", str(run_dir), "--quiet",
                          "--set", f"num_tasks={N}", "batch_size=8", "concurrency=4", "heldout_fraction=0.1",
                          "--decontaminate", str(DEV)])
    assert rc == 0
    after = lines(traj_file)
    assert sorted(r["task_id"] for r in after) == sorted(r["task_id"] for r in before)
    assert len(after) == len(before)
    assert len(lines(run_dir / "tasks" / "tasks.jsonl")) + len(lines(run_dir / "tasks" / "failures.jsonl")) == N
