"""``eval/medcalc_bench.py --solver model``: the agent's backends on MedCalc-Bench rows, scored by
the same function as the registry solver."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from calcmate.medcalc_bench import read_csv

from test_agent_backends import ChatServer  # the real local OpenAI-compatible server

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests" / "fixtures" / "medcalc_bench" / "dev_relabelled.csv"


def _load_eval():
    spec = importlib.util.spec_from_file_location("eval_medcalc_bench_model", ROOT / "eval" / "medcalc_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_model_solver_zero_and_one_shot_over_http(tmp_path):
    rows = [r for r in read_csv(CSV) if r.calculator_id in (5, 6)]
    truth_by_note = {r.patient_note: r.truth for r in rows}
    seen: list[dict] = []

    def reply(_n, body):
        seen.append(body)
        user = body["messages"][-1]["content"]
        note = user.split("Here is the patient note:\n", 1)[1].split("\n\nHere is the task:", 1)[0]
        answer = truth_by_note.get(note, "0")
        return {"content": "<think>compute</think>```json\n" + json.dumps({"step_by_step_thinking": "...", "answer": answer}) + "\n```"}

    server = ChatServer(reply)
    mod = _load_eval()
    try:
        for mode in ("zero_shot", "one_shot"):
            out = tmp_path / f"{mode}.json"
            rc = mod.main(["--solver", "model", "--csv", str(CSV), "--out", str(out), "--model", "served",
                           "--set", "calculator_ids=[5,6]", f"model.mode={mode}", "model.backend.kind=openai",
                           f"model.backend.base_url={server.url}", "model.concurrency=4"])
            assert rc == 0
            data = json.loads(out.read_text())
            # the served "model" answers every row with its label: all correct under MedCalc-Bench's rule
            assert data["overall"] == {"n": len(rows), "correct": len(rows), "accuracy": 1.0}
    finally:
        server.close()
    zero = [r for r in seen if len(r["messages"]) == 2]
    one = [r for r in seen if len(r["messages"]) == 4]
    assert len(zero) == len(rows) and len(one) == len(rows)
    for r in one:  # the worked example is another row of the same calculator, never the row itself
        ex_note = r["messages"][1]["content"]
        assert ex_note != r["messages"][3]["content"] and "Here is the patient note" in ex_note
        assert json.loads(r["messages"][2]["content"])["answer"] in truth_by_note.values()


def test_model_solver_on_tiny_local_model_never_crashes(tmp_path):
    from calcmate.training.tiny import build_tiny

    model = build_tiny(tmp_path / "tiny")
    out = tmp_path / "r.json"
    mod = _load_eval()
    rc = mod.main(["--solver", "model", "--csv", str(CSV), "--out", str(out), "--model", str(model),
                   "--set", "calculator_ids=[5]", "model.backend.kind=transformers", "model.backend.sampling.max_tokens=8"])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["overall"]["n"] == len([r for r in read_csv(CSV) if r.calculator_id == 5])
