"""The synthesis audit (``python -m calcmate.synth.audit DIR``) counts each planted defect exactly.

Hand-made run directories in the real formats (``tasks/tasks.jsonl``, ``trajectories/trajectories.jsonl``
with Trajectory records, ``dataset/train.jsonl`` in TRL's conversational format) plant one defect at a
time; a clean directory scores 0 violations; and a real offline synthesis of a few tasks is audited.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from calcmate.agent.final_answer import write_final_answer
from calcmate.synth import audit as A

ROOT = Path(__file__).resolve().parents[1]
PID = "P0001"
WRAP = (f"I am assessing the patient with patient_id '{PID}'. Please explicitly identify and use applicable medical "
        "calculators to quantify the assessment. Show the calculated results.\n\n")
TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object", "properties": {}}}}
         for n in A.OFFICIAL_TOOLS]
PLAN = "Plan:\n1. Work out body size from the recorded weight and height, then decide on dosing."


def sql_obs(rows: list[dict[str, Any]]) -> str:
    from calcmate.tools.official import SQL_EMPTY

    return json.dumps([{"sql_id": 0, "result": rows if rows else SQL_EMPTY}], ensure_ascii=False, default=str)


VITALS = [{"measure_time": "2024-07-02 09:00:00", "weight": "70", "height": "175", "temperature": "37.1"},
          {"measure_time": "2024-07-01 09:00:00", "weight": "72", "height": "175", "temperature": "36.8"}]
BMI_CODE = "import json\n\nv = {\n    'weight': 70.0,  # Weight, kg\n    'height': 175.0,  # Height, cm\n}\nprint(round(v['weight'] / (v['height'] / 100) ** 2, 1))\n"


class Ep:
    """Builds one episode: chat messages (native) and the matching ToolCallRecords."""

    def __init__(self, task_id: str, question: str):
        self.task_id = task_id
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": "You are CalcMate."},
                                               {"role": "user", "content": WRAP + question}]
        self.records: list[dict[str, Any]] = []

    def say(self, text: str) -> "Ep":  # an assistant turn without a tool call
        self.messages.append({"role": "assistant", "content": text})
        return self

    def call(self, thought: str, *calls: tuple[str, dict[str, Any], str], error: bool = False) -> "Ep":
        tcs = []
        for name, args, _ in calls:
            cid = f"call_{len(self.records)}"
            tcs.append({"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}})
            self.records.append({"id": cid, "server": "x", "tool": name, "arguments": args, "result": "", "is_error": error})
        self.messages.append({"role": "assistant", "content": thought, "tool_calls": tcs})
        for (_, _, result), tc, rec in zip(calls, tcs, self.records[-len(calls):]):
            rec["result"] = result
            self.messages.append({"role": "tool", "tool_call_id": tc["id"], "content": result})
        return self

    def answer(self, prose: str = "BMI is normal; no dose change is needed.") -> "Ep":
        self.messages.append({"role": "assistant", "content": write_final_answer(
            [{"calculator": "Body Mass Index (BMI)", "value": 22.9, "unit": "kg/m²", "interpretation": "Normal"}], prose)})
        return self

    def trajectory(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "policy": "teacher:test", "protocol": "native", "messages": self.messages,
                "tool_calls": self.records, "finished": True, "stop_reason": "answer"}


def clean(task_id: str = "t0", question: str = "A man on the ward needs his drug doses reviewed against his body size; "
          "what do you make of it?", *, plan: str = PLAN, code: str = BMI_CODE, vitals: list | None = None,
          before_python=None, before_answer=None) -> Ep:
    e = Ep(task_id, question)
    e.call(plan, ("list_tables", {}, json.dumps([{"table_name": "vital_signs"}])))
    e.call("Which columns hold weight and height?", ("describe_tables", {"table_names": ["vital_signs"]}, '{"tables": {}}'))
    e.call("Look up how body mass index is computed.", ("search", {"query": "body mass index formula adults"},
           json.dumps([{"title": "BMI", "link": "calcmate://calculators/bmi", "snippet": "", "position": 1, "date": None}])))
    e.call("Read the reference.", ("fetch", {"url": "calcmate://calculators/bmi"}, "Contents of calcmate://calculators/bmi:\n\n# BMI"))
    e.call("Pull the latest weight and height.", ("run_read_only_sql", {"query": f"SELECT measure_time, weight, height, temperature FROM vital_signs WHERE patient_id = '{PID}' ORDER BY measure_time DESC"},
           sql_obs(VITALS if vitals is None else vitals)))
    if before_python:
        before_python(e)
    e.call("Compute it from the latest row.", ("run_python", {"code": code}, "Output:\n22.9"))
    if before_answer:
        before_answer(e)
    return e.answer()


def task(task_id: str, question: str, calcs: tuple[str, ...] = ("Body Mass Index (BMI)",)) -> dict[str, Any]:
    return {"task_id": task_id, "task_scenario": "Obesity, Body Size and Nutrition", "patient_id": PID,
            "task_category": "Clinical Medicine / Medicine & Organ Systems / Endocrinology & Metabolism",
            "fuzzy_question": question, "required_calculators": list(calcs),
            "calculator_answers": [{"order": i + 1, "name": n, "inputs": [], "final_answer": 22.9} for i, n in enumerate(calcs)]}


def write_run(d: Path, eps: list[Ep], tools: list[dict[str, Any]] = TOOLS, tasks: list[dict] | None = None) -> Path:
    (d / "tasks").mkdir(parents=True)
    (d / "trajectories").mkdir()
    (d / "dataset").mkdir()
    tasks = tasks or [task(e.task_id, e.messages[1]["content"][len(WRAP):]) for e in eps]
    (d / "tasks" / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (d / "trajectories" / "trajectories.jsonl").write_text("".join(json.dumps(
        {"task_id": e.task_id, "status": "kept", "attempts": 1, "rejections": [], "teacher": "t", "trajectory": e.trajectory()}) + "\n"
        for e in eps))
    (d / "dataset" / "train.jsonl").write_text("".join(json.dumps(
        {"id": e.task_id, "messages": e.messages, "tools": json.dumps(tools), "calculators": ["Body Mass Index (BMI)"],
         "num_tokens": 0, "token_count_method": "estimate"}) + "\n" for e in eps))
    return d


def both(res: dict[str, Any], *path: str) -> tuple[Any, Any]:
    return A._get(res["dataset"], *path), A._get(res["trajectories"], *path)


@pytest.fixture(scope="module")
def clean_result(tmp_path_factory):
    d = write_run(tmp_path_factory.mktemp("clean"), [clean()])
    assert A.main([str(d), "--quiet"]) == 0
    return json.loads((d / "audit.json").read_text())


# -- a clean run ---------------------------------------------------------------------------------------
def test_a_clean_run_scores_zero_violations(clean_result):
    r = clean_result
    for path in [("lone_assistant_turns", "total"), ("non_official_tool_calls", "total"), ("grounding", "grounding_violations"),
                 ("grounding", "boolean_contradicts_record"), ("grounding", "defaults_visible_in_results"),
                 ("grounding", "inputs_not_most_recent"), ("implausible_demographics", "count"), ("sql", "errors"),
                 ("sql", "empty"), ("recovery", "trajectories_with_recovery")]:
        assert both(r, *path) == (0, 0), path
    assert both(r, "grounding", "grounded") == (2, 2)
    assert both(r, "physiological_violations", "count") in ((0, 0), (None, None))
    assert r["tasks"]["questions"]["name_debris"] == 0 and r["tasks"]["questions"]["naming_a_calculator"] == 0
    assert r["tokens_exact"] is False and r["tokens"]["method"].startswith("estimate")
    assert r["tokens"]["rows_over_max_length"] == 0
    assert 0 < r["tokens"]["plan_token_share"] < 0.5
    assert both(r, "search", "canonical_name_share") == (0.0, 0.0) and both(r, "search", "fetch_top_hit_share") == (1.0, 1.0)
    failed = [s["metric"] for s in r["summary"] if s["pass"] is False]
    # a one-row run cannot reach the volume targets; no violation target fails
    assert set(failed) <= {"recovery_share", "calculators_per_task", "unique_calculators", "thought_top6_share",
                           "question_distinct_openings", "plan_token_share"}, failed


# -- planted defects -----------------------------------------------------------------------------------
def test_lone_turns_and_unofficial_tool_names_are_counted(tmp_path):
    e = clean("t1")
    e.messages.insert(2, {"role": "assistant", "content": "Plan: a header on its own."})
    f = clean("t2")
    for m in f.messages:
        for tc in m.get("tool_calls") or []:
            if tc["function"]["name"] == "run_read_only_sql":
                tc["function"]["name"] = "run_sql"
    for rec in f.records:
        if rec["tool"] == "run_read_only_sql":
            rec["tool"] = "run_sql"
    tools = TOOLS + [{"type": "function", "function": {"name": "run_sql", "parameters": {}}}]
    r = A.audit(write_run(tmp_path, [e, f], tools=tools))
    assert both(r, "lone_assistant_turns", "total") == (1, 1)
    assert both(r, "lone_assistant_turns", "trajectories_with_any") == (1, 1)
    assert both(r, "non_official_tool_calls", "by_name") == ({"run_sql": 1}, {"run_sql": 1})
    assert r["dataset"]["non_official_tool_calls"]["tool_schemas_outside_official"] == {"run_sql": 2}
    # the lone turn is the plan there: the first tool-calling turn's text is then a thought
    assert r["dataset"]["thoughts"]["n"] == 5 + 6


def test_grounding_defects_are_counted_exactly(tmp_path):
    findings = {"exam_findings": "Active cancer: Yes\nHeart rate recorded: yes", "exam_time": "2024-07-02 08:00:00"}
    code = ("import json\nv = {\n"
            "    'weight': 72.0,  # Weight, kg\n"  # grounded, but not the latest weight (70 is)
            "    'height': 175.0,  # Height, cm\n"  # grounded
            "    'creatinine': 1.4,  # Serum creatinine, mg/dL\n"  # in no result: violation
            "    'active_cancer': False,  # Active cancer\n"  # the record says Yes: contradiction
            "    'temperature': 37.0,  # Temperature: not given, default 37.0\n"  # the record has it: default visible
            "    'hemoptysis': False,  # Hemoptysis: not given, default False\n"  # a declared default, truly absent
            "    'sex': 'male',  # Sex\n"  # a gender column says M: grounded
            "}\nprint(1)\n")
    e = clean("t1", code=code, vitals=[{**VITALS[0], "gender": "M"}, VITALS[1]], before_python=lambda e: e.call(
        "Check the problem list.", ("run_read_only_sql", {"query": "SELECT exam_findings, exam_time FROM examination_report"},
                                    sql_obs([findings]))))
    r = A.audit(write_run(tmp_path, [e]))
    for src in ("dataset", "trajectories"):
        g = r[src]["grounding"]
        assert g["inputs"] == 7, src
        assert g["grounded"] == 3, g  # weight, height, sex
        assert g["grounding_violations"] == 1 and "creatinine" in g["examples"]["grounding_violations"][0]
        assert g["boolean_contradicts_record"] == 1 and "active_cancer" in g["examples"]["boolean_contradicts_record"][0]
        assert g["declared_defaults"] == 2 and g["defaults_visible_in_results"] == 1
        assert g["inputs_not_most_recent"] == 1
        assert g["trajectories_with_violation"] == 1


def test_recovery_needs_a_corrected_call_of_the_same_tool(tmp_path):
    from calcmate.tools.official import SQL_ERROR

    ok = sql_obs(VITALS)
    q = "SELECT weight FROM vital_signs WHERE patient_id = 'P0001'"
    def fixed(e: Ep) -> None:  # 1: an error, describe_tables, then a corrected query: recovered
        e.call("Try the weight column.", ("run_read_only_sql", {"query": "SELECT wt FROM vital_signs"}, SQL_ERROR.format('column "wt" does not exist')))
        e.call("Check the columns.", ("describe_tables", {"table_names": ["vital_signs"]}, '{"tables": {}}'))
        e.call("Use the right column.", ("run_read_only_sql", {"query": q}, ok))

    def broadened(e: Ep) -> None:  # 2: an empty result (old pipe table, old tool name), then a broader query: recovered
        e.call("Today's weight.", ("run_sql", {"query": q + " AND measure_time > now()"}, "weight\n(0 rows)"))
        e.call("Any weight.", ("run_sql", {"query": q}, "weight\n70\n(1 row)"))

    def stuck(e: Ep) -> None:  # 3: an error the agent never corrects (the same query again): not recovered
        e.call("Try.", ("run_read_only_sql", {"query": "SELECT wt FROM x"}, SQL_ERROR.format("no")))
        e.call("Try again.", ("run_read_only_sql", {"query": "SELECT wt FROM x"}, SQL_ERROR.format("no")))

    a, b, c = (clean(f"t{i}", before_answer=f) for i, f in enumerate((fixed, broadened, stuck)))
    r = A.audit(write_run(tmp_path, [a, b, c]))
    for src in ("dataset", "trajectories"):
        rec = r[src]["recovery"]
        assert rec["trajectories_with_recovery"] == 2, (src, rec)
        assert rec["share"] == round(2 / 3, 4)
        assert rec["failed_or_empty_calls"] == 4 and rec["recovered"] == 2
        assert r[src]["sql"]["errors"] == 3 and r[src]["sql"]["empty"] == 1
        assert r[src]["non_official_tool_calls"]["total"] == 2
        assert r[src]["lone_assistant_turns"]["total"] == 0


def test_ehr_plausibility_defects(tmp_path):
    hot = [{**VITALS[0], "temperature": "44.9"}, VITALS[1]]
    e = clean("t1", vitals=hot)
    f = clean("t2", before_python=lambda f: f.call("Demographics.", (
        "run_read_only_sql", {"query": "SELECT gender, ethnicity FROM patient_information"},
        sql_obs([{"patient_id": PID, "gender": "Male", "ethnicity": "Yes"}]))))
    r = A.audit(write_run(tmp_path, [e, f]))
    assert both(r, "implausible_demographics", "count") == (1, 1)
    if r["checkers"]["physiology"].startswith(A.NOT_AVAILABLE):
        assert both(r, "physiological_violations", "count") == (None, None)
    else:
        assert both(r, "physiological_violations", "count") == (1, 1)
        assert both(r, "physiological_violations", "trajectories_with_any") == (1, 1)


def test_thoughts_questions_and_sql_shapes(tmp_path):
    same = "I'm seeing a patient on the ward today who needs"
    qs = [same + " a review of drug doses.", same + " a check of body size.",
          "Please work out this measure for the patient on the ward and tell me what it means.",
          "Can you apply the CURB-65 score to the 67-year-old with pneumonia on the ward?"]
    eps = [clean(f"t{i}", question=q) for i, q in enumerate(qs)]
    for k, e in enumerate(eps):  # identical thoughts apart from numbers, quotes and calculator names
        for m in e.messages:
            if m["role"] == "assistant" and m.get("tool_calls") and m["content"] != PLAN:
                m["content"] = f"Compute {['BMI', 'CURB-65', 'Wells DVT', 'BSA'][k]} for step {k + 1} with 'x{k}'."
    # a structurally different query in one trajectory
    sql = next(m for m in eps[3].messages if m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "run_read_only_sql")
    sql["tool_calls"][0]["function"]["arguments"] = json.dumps({"query": "SELECT weight FROM vital_signs WHERE patient_id = 'X' LIMIT 1"})
    r = A.audit(write_run(tmp_path, eps))
    t = r["dataset"]["thoughts"]
    assert t["n"] == 4 * 5 and t["top6_share"] == 1.0 and t["distinct_ratio"] == round(1 / 20, 4), t["top6"]
    assert t["top6"][0][0] == "compute <calc> for step <num> with <q>"
    for q in (r["tasks"]["questions"], r["dataset"]["questions"]):
        assert q["n"] == 4 and q["distinct_openings"] == 3 and q["distinct_openings_share"] == 0.75
        assert q["name_debris"] == 1 and q["naming_a_calculator"] == 1
    assert both(r, "sql", "distinct_shapes") == (2, 2) and both(r, "sql", "queries") == (4, 4)
    assert both(r, "sql", "shapes_per_300") == (None, None)  # fewer than 300 trajectories: no rate
    assert A.sql_shape("SELECT a, b, c FROM t WHERE x = 'p' AND (a IS NOT NULL OR b IS NOT NULL) ORDER BY d DESC") == \
        A.sql_shape("select w, h FROM vital_signs WHERE patient_id = 'q' AND (w IS NOT NULL OR h IS NOT NULL OR z IS NOT NULL) ORDER BY t DESC")


def test_thought_normalisation():
    assert A.normalise_thought('Compute the CURB-65 score: 3 points, "high".') == A.normalise_thought("compute the CURB 65 score: 12 points, 'low'.")
    assert A.normalise_thought("Find the reference for Body Mass Index (BMI).") == "find the reference for <calc>"
    assert A.normalise_thought("Read the Foo Index.", ["Foo Index"]) == "read the <calc>"


def test_tokens_over_max_length_and_plan_share(tmp_path):
    long_plan = PLAN + "\n" + "2. Another step with more words to find. " * 200
    r = A.audit(write_run(tmp_path, [clean("t1"), clean("t2", plan=long_plan)]), max_length=2000)
    tok = r["tokens"]
    assert r["tokens_exact"] is False and tok["rows_over_max_length"] == 1 and tok["over_ids"] == ["t2"]
    assert tok["p50"] < 2000 < tok["max"]
    ctr = A.TokenCounter(None)
    plans = [ctr.text(PLAN), ctr.text(long_plan)]
    assert tok["plan_token_share"] == round(sum(plans) / sum(ctr.text(ctr.render(e.messages, e.tools)) for e in
                                                                [A.episode_from_row(json.loads(x)) for x in (tmp_path / "dataset" / "train.jsonl").read_text().splitlines()]), 4)


def test_react_json_rows_are_read(tmp_path):
    from calcmate.agent.trajectory import Trajectory
    from calcmate.synth.export import react_json_messages

    e = clean("t1")
    e.messages.insert(2, {"role": "assistant", "content": "lone"})
    msgs = react_json_messages(Trajectory.model_validate(e.trajectory()), question="Q?")
    ep = A.episode_from_messages("t1", msgs)
    assert [c.name for c in ep.calls] == ["list_tables", "describe_tables", "search", "fetch", "run_read_only_sql", "run_python"]
    assert ep.calls[-1].result and "22.9" in ep.calls[-1].result and ep.lone_turns == 1 and ep.final_text and "<final_answer>" in ep.final_text


def test_checker_hooks_degrade_and_consume(tmp_path, monkeypatch):
    d = write_run(tmp_path, [clean("t1")], tasks=[task("t1", "q", ("Body Mass Index (BMI)", "Body Surface Area (BSA)"))])
    monkeypatch.setitem(sys.modules, "calcmate.synth.consistency", None)  # import fails
    monkeypatch.setitem(sys.modules, "calcmate.synth.pathways", None)
    r = A.audit(d)
    assert r["tasks"]["contradictions"]["count"] is None and A.NOT_AVAILABLE in r["tasks"]["contradictions"]["reason"]
    assert r["tasks"]["pathways"]["polarity_errors"] is None and A.NOT_AVAILABLE in r["tasks"]["pathways"]["reason"]
    cons = types.ModuleType("calcmate.synth.consistency")
    cons.contradictions = lambda t: ["cancer yes vs Caprini malignancy 0"] if t.task_id == "t1" else []
    path = types.ModuleType("calcmate.synth.pathways")
    path.check_task = lambda t: {"off_pathway": ["bsa"], "polarity_errors": [], "population_mismatches": ["bmi: infant"]}
    monkeypatch.setitem(sys.modules, "calcmate.synth.consistency", cons)
    monkeypatch.setitem(sys.modules, "calcmate.synth.pathways", path)
    r = A.audit(d)
    assert r["tasks"]["contradictions"]["count"] == 1
    p = r["tasks"]["pathways"]
    assert (p["off_pathway"], p["off_pathway_share"], p["polarity_errors"], p["population_mismatches"]) == (1, 0.5, 0, 1)


def test_cli_prints_and_refuses_an_empty_dir(tmp_path, capsys):
    assert A.main([str(tmp_path)]) == 2
    d = write_run(tmp_path / "run", [clean()])
    assert A.main([str(d)]) == 0
    out = capsys.readouterr().out
    assert "lone_assistant_turns" in out and "tokens_exact=False" in out
    assert json.loads((d / "audit.json").read_text())["counts"]["dataset_rows"] == 1


# -- a real offline synthesis ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_run(shared_server, tmp_path_factory):
    pytest.importorskip("calcmate.ehr.materialize")
    sys.path.insert(0, str(ROOT / "data_gen"))
    import synthesize

    out = tmp_path_factory.mktemp("synth")
    assert synthesize.main(["--config", str(ROOT / "configs/synth/offline.yaml"), "--out", str(out), "--quiet",
                            "--set", "num_tasks=4", "batch_size=4", "concurrency=4", "min_calculators=2",
                            "max_calculators=4"]) == 0
    return out


def test_a_real_offline_run_is_audited(real_run):
    assert A.main([str(real_run), "--quiet"]) == 0
    r = json.loads((real_run / "audit.json").read_text())
    kept = r["counts"]["kept"]
    assert kept >= 3 and r["counts"]["dataset_rows"] == kept == r["dataset"]["n"] == r["trajectories"]["n"]
    assert r["tokens_exact"] is False and r["tokens"]["p50"] > 1000
    # the exported rows and the trajectory records agree where the export adds nothing
    for path in [("non_official_tool_calls", "total"), ("sql", "queries"), ("sql", "distinct_shapes"),
                 ("grounding", "inputs"), ("recovery", "failed_or_empty_calls")]:
        dv, tv = both(r, *path)
        assert dv == tv and dv is not None, path
    assert r["dataset"]["grounding"]["inputs"] > 0 and r["dataset"]["thoughts"]["n"] > 0
    assert r["tasks"]["calculators"]["per_task"] >= 2 and r["tasks"]["calculators"]["unique"] >= 2
    assert {s["metric"] for s in r["summary"]} == set(A.METRICS)
