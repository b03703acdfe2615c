"""End to end: eval/evaluate.py through the real tools on materialized patients.

The oracle computes only through the registry and the tools: on registry-computable (synthesized)
tasks it must score QP 100 (a harness check that fails when a tool, the materializer, the reading of
values or the scorer breaks); perturbed oracles score what the perturbation predicts; on the
benchmark's dev tasks it reports its honest coverage and never a label it did not compute; reruns
resume; a tiny local Qwen3 runs through the transformers backend.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from calcmate.agent.runner import EvalConfig, evaluate
from calcmate.tasks import read_tasks

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"


# the stages' own server (calcmate.ehr.get_server) is this session's
pytestmark = pytest.mark.usefixtures("shared_server")


@pytest.fixture(scope="module")
def synth_tasks(tmp_path_factory):
    """Registry-computable tasks (the synthesizer's offline composer), as a tasks.jsonl."""
    from calcmate.calculators.registry import registry
    from calcmate.synth.build import offline_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    tax = load_taxonomy(reg=reg)
    tasks = []
    for i in range(40):
        try:
            tasks.append(offline_task(tax, reg, "eval-oracle", i, min_calcs=3, max_calcs=5))
        except Exception:  # a composition the question rules reject: the next index
            continue
        if len(tasks) == 8:
            break
    path = tmp_path_factory.mktemp("synth") / "tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    return path


def run(tmp_path, name, tasks=DEV, **kw):
    cfg = EvalConfig.model_validate({"tasks": str(tasks), "policy": "oracle", "concurrency": 4, **kw})
    return evaluate(cfg, tmp_path / name, show_progress=False)


@pytest.fixture(scope="module")
def oracle_scores(tmp_path_factory, synth_tasks):
    return run(tmp_path_factory.mktemp("eval"), "oracle", synth_tasks)


def test_oracle_computes_every_registry_task_through_the_tools(oracle_scores, synth_tasks):
    o = oracle_scores["overall"]
    assert o["n_tasks"] == len(read_tasks(synth_tasks))
    assert o["TF"] == 100 and o["CS"] == 100 and o["QP"] == 100, [
        (t["task_id"], t["qp"]) for t in oracle_scores["per_task"] if t["qp"] < 1]
    assert oracle_scores["coverage"]["share"] == 100
    assert o["EA"] >= 95, [(t["task_id"], t["ea_found"], t["ea_total"]) for t in oracle_scores["per_task"] if t["ea"] < 1]
    calls = o["tool_calls_per_task"]
    assert calls["search"] >= calls["fetch"] == calls["python"] > 0 and calls["sql"] > 0
    assert o["extra_calculators_per_task"] == 0 and o["format_errors_per_task"] == 0


def test_oracle_on_benchmark_tasks_reports_coverage_and_never_a_label_it_did_not_compute(tmp_path):
    s = run(tmp_path, "dev")
    cov = s["coverage"]
    assert 0 < cov["computed"] < cov["answers"] == sum(len(t.calculator_answers) for t in read_tasks(DEV))
    assert s["overall"]["QP"] <= cov["share"] + 1e-6  # a value it could not compute is never right
    trajs = [json.loads(x) for x in (tmp_path / "dev" / "trajectories.jsonl").read_text().splitlines()]
    missing = [i for t in trajs for i in t["final_answer"] if i["value"] is None]
    assert missing and all(i["interpretation"].startswith("not computed: ") for i in missing)
    assert set(s["per_domain"]) <= {
        "Medicine & Organ Systems", "Emergency, Critical Care & Perioperative",
        "Special Populations & General Tools", "Neurology & Mental Health"}


def _predicted(tasks, keep):
    return 100 * sum(keep(len(t.calculator_answers)) / len(t.calculator_answers) for t in tasks) / len(tasks)


@pytest.mark.parametrize("perturb", [{"drop_calculators": 0.5}, {"corrupt_values": 0.34}, {"skip_sql": True}])
def test_perturbed_oracle_scores_what_the_perturbation_predicts(tmp_path, oracle_scores, synth_tasks, perturb):
    tasks = read_tasks(synth_tasks)
    s = run(tmp_path, "p", synth_tasks, perturb=perturb)["overall"]
    if "drop_calculators" in perturb:
        want = _predicted(tasks, lambda n: n - math.floor(0.5 * n))
        assert s["CS"] == pytest.approx(want, abs=0.01) and s["QP"] == pytest.approx(want, abs=0.01)
        assert s["EA"] < oracle_scores["overall"]["EA"]
    elif "corrupt_values" in perturb:
        want = _predicted(tasks, lambda n: n - math.floor(0.34 * n))
        assert s["CS"] == 100 and s["QP"] == pytest.approx(want, abs=0.01)
        assert s["EA"] == oracle_scores["overall"]["EA"]
    else:  # no SQL: nothing read from the EHR, so only what needs no EHR value can be computed
        assert s["EA"] == 0 and s["CS"] == 100 and s["QP"] < 50 and s["tool_calls_per_task"]["sql"] == 0


def test_rerun_resumes_and_never_duplicates(tmp_path, synth_tasks):
    first = run(tmp_path, "r", synth_tasks, limit=2)
    assert first["overall"]["n_tasks"] == 2
    traj = tmp_path / "r" / "trajectories.jsonl"
    lines = traj.read_text().splitlines()
    traj.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # a crash mid-write
    full = run(tmp_path, "r", synth_tasks)
    ids = [json.loads(x)["task_id"] for x in traj.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(read_tasks(synth_tasks))
    assert full["overall"]["QP"] == 100 and full["run"]["missing_trajectories"] == 0


def _load(script):
    spec = importlib.util.spec_from_file_location(f"eval_{script}", ROOT / "eval" / f"{script}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tiny_qwen3_end_to_end_through_transformers_backend(tmp_path, capsys):
    from calcmate.training.tiny import build_tiny

    model = build_tiny(tmp_path / "checkpoint-5")
    out = tmp_path / "run"
    rc = _load("evaluate").main([
        "--config", str(ROOT / "configs" / "eval" / "medmcp_calc.yaml"), "--model", str(model), "--tasks", str(DEV),
        "--out", str(out), "--backend", "transformers", "--limit", "2", "--quiet",
        "--set", "episode.max_rounds=2", "backend.sampling.max_tokens=8", "backend.sampling.temperature=0"])
    assert rc == 0
    scores = json.loads((out / "scores.json").read_text())
    assert scores["overall"]["n_tasks"] == 2 and scores["run"]["policy"] == "model"
    assert scores["overall"]["prompt_tokens_per_task"] > 0 and scores["overall"]["rounds_per_task"] <= 2
    for k in ("TF", "CS", "EA", "QP"):
        assert 0 <= scores["overall"][k] <= 100
    assert (out / "report.md").read_text().count("| Model |") == 2 and (out / "metrics.png").stat().st_size > 0
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2
    # the sweep finds the finished checkpoint run and writes the leaderboard
    sweep_out = tmp_path / "sweep"
    (sweep_out / "checkpoint-5").mkdir(parents=True)
    for f in ("scores.json",):
        (sweep_out / "checkpoint-5" / f).write_text((out / f).read_text())
    assert _load("sweep").main(["--checkpoints", str(tmp_path / "checkpoint-*"), "--out", str(sweep_out)]) == 0
    board = (sweep_out / "leaderboard.csv").read_text().splitlines()
    assert board[0].startswith("checkpoint,step") and board[1].startswith("checkpoint-5,5,2")
    assert "skip" in capsys.readouterr().out and (sweep_out / "metrics_vs_step.png").exists()


def test_bad_config_names_the_field(tmp_path, capsys):
    mod = _load("evaluate")
    with pytest.raises(SystemExit):
        mod.main(["--policy", "oracle", "--tasks", str(DEV), "--out", str(tmp_path), "--set", "concurrency=0"])
    assert "concurrency" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        mod.main(["--tasks", str(DEV), "--out", str(tmp_path)])
    assert "backend.model" in capsys.readouterr().err
