"""TF/CS/QP/EA on hand-built trajectories whose scores are known by construction."""

from __future__ import annotations

import pytest

from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.trajectory import FinalAnswerItem, ToolCallRecord, Trajectory
from calcmate.scoring.extract import extract_from_text
from calcmate.scoring.metrics import SqlEvidence, aggregate, match_names, score_task
from calcmate.tasks import Task

TASK = Task.model_validate({
    "task_id": "t1", "fuzzy_question": "q", "task_category": "Clinical Medicine / Medicine & Organ Systems / Nephrology",
    "calculator_answers": [
        {"order": 1, "name": "Creatinine Clearance (Cockcroft-Gault Equation)", "final_answer": 58.3,
         "inputs": [{"field": "Age", "value": "67 years"}, {"field": "Weight", "value": "180 lb"},
                    {"field": "Creatinine", "value": "1.4 mg/dL"}, {"field": "Sex", "value": "Female"}]},
        {"order": 2, "name": "Anion Gap", "final_answer": 12,
         "inputs": [{"field": "Sodium", "value": "140 mEq/L"}, {"field": "Chloride", "value": "104 mEq/L"},
                    {"field": "Bicarbonate", "value": "24 mEq/L"}]},
        {"order": 3, "name": "Modified Hoehn and Yahr Scale for Parkinson's Disease", "final_answer": "Stage 3",
         "inputs": [{"field": "Severity", "value": "Mild to moderate bilateral disease; some postural instability (Stage 3)"}]},
        {"order": 4, "name": "Gestational Age", "final_answer": "31 Weeks 1 Day", "inputs": []},
    ],
})


def traj(items, sql_results=(), finished=True, **kw) -> Trajectory:
    calls = [ToolCallRecord(id=str(i), server="postgres", tool="run_sql", arguments={"query": "q"}, result=r)
             for i, r in enumerate(sql_results)]
    calls.append(ToolCallRecord(id="d", server="postgres", tool="describe_tables", arguments={}, result="age weight sex female 140"))
    return Trajectory(task_id="t1", policy="test", finished=finished, tool_calls=calls,
                      final_answer=[FinalAnswerItem(**i) for i in items] if items is not None else None, **kw)


PERFECT = [{"calculator": "Cockcroft-Gault", "value": 58.3}, {"calculator": "Anion gap", "value": "12 mEq/L"},
           {"calculator": "Modified Hoehn & Yahr Scale for Parkinsons Disease", "value": "Stage 3"},
           {"calculator": "Gestational Age", "value": "31 weeks 1 day"}]
ALL_INPUTS = ("age 67 | weight_kg 81.6 | creatinine 1.4 mg/dL | sex F Female",
              "Na 140 | Cl 104 | HCO3 24", "PD severity: Mild to moderate bilateral disease; some postural instability")


def test_perfect_answer_scores_full():
    s = score_task(TASK, traj(PERFECT, ALL_INPUTS))
    assert (s.tf, s.cs, s.qp, s.ea) == (True, 1.0, 1.0, 1.0)
    assert s.extra_calculators == 0 and s.tool_calls["sql"] == 4 and s.ea_total == 8


def test_partial_names_values_and_inputs():
    items = [{"calculator": "CrCl", "value": 61.0},  # registry alias, value within 5% of 58.3
             {"calculator": "Anion Gap", "value": 13},  # integer truth: must be exact
             {"calculator": "HEART score", "value": 3}]  # extra calculator
    # SQL saw age, creatinine (converted units do not matter here), sodium only: 3 of 8 inputs
    s = score_task(TASK, traj(items, ["age 67", "creatinine 123.8 umol/L", "sodium 140"]))
    assert s.cs == pytest.approx(2 / 4) and s.qp == pytest.approx(1 / 4)
    assert s.ea_found == 3 and s.ea == pytest.approx(3 / 8) and s.extra_calculators == 1


def test_qp_is_not_conditional_on_cs():
    # the name is unrecognisable but the value is the truth's
    s = score_task(TASK, traj([{"calculator": "the kidney number", "value": 58.0}]))
    assert s.cs == 0 and s.qp == pytest.approx(1 / 4)


def test_describe_tables_and_errors_are_not_evidence():
    t = traj(PERFECT, [])
    t.tool_calls.append(ToolCallRecord(id="e", server="postgres", tool="run_sql", arguments={}, result="age 67", is_error=True))
    assert score_task(TASK, t).ea == 0


def test_unfinished_or_missing_trajectory_scores_zero_but_counts():
    s = score_task(TASK, traj(PERFECT, ALL_INPUTS, finished=False))
    assert (s.tf, s.cs, s.qp) == (False, 0, 0) and s.ea == 1.0  # EA does not need an answer
    s = score_task(TASK, None)
    assert (s.tf, s.cs, s.qp, s.ea, s.n_calculators) == (False, 0, 0, 0, 4)


def test_free_text_and_json_answers_are_extracted():
    items, how = extract_from_text("Results:\n- Cockcroft-Gault: 58.1 mL/min (moderately reduced)\n- **Anion Gap**: 12\n")
    assert how == "text" and [(i.calculator, i.value) for i in items] == [("Cockcroft-Gault", "58.1 mL/min"), ("Anion Gap", "12")]
    items, how = extract_from_text('{"Anion Gap": 12, "MELD": {"value": 21, "unit": "points"}}')
    assert how == "json" and items[1].value == 21
    items, how = extract_from_text("<think>x</think>" + write_final_answer(PERFECT))
    assert how == "block" and len(items) == 4
    t = Trajectory(task_id="t1", policy="p", finished=True, final_answer_text="Cockcroft-Gault: 58.1 mL/min\nAnion Gap: 12")
    s = score_task(TASK, t)
    assert s.extraction == "text" and s.cs == pytest.approx(0.5) and s.qp == pytest.approx(0.5)


def test_name_matching_is_one_to_one():
    assign = match_names(["Anion Gap", "Anion Gap"], ["Anion Gap", "Delta Gap"], threshold=85)
    assert assign == {0: 0} or assign == {0: 1}


def test_sql_evidence_normalises_numbers_units_and_text():
    ev = SqlEvidence(traj([], ["weight 81.65 kg; Temp 38.0", "Severity: mild to moderate bilateral disease"]))
    assert ev.contains("180 lb") and ev.contains("38 degC") and not ev.contains("39 degC")
    assert ev.contains("Mild to moderate bilateral disease (Stage 3)") and not ev.contains("Severe disease")


def test_aggregate_per_domain_and_overall():
    other = TASK.model_copy(update={"task_id": "t2", "task_category": "Clinical Medicine / Neurology & Mental Health / Neuro"})
    scores = [score_task(TASK, traj(PERFECT, ALL_INPUTS)), score_task(other, traj(PERFECT[:2], []))]
    agg = aggregate(scores)
    o = agg["overall"]
    assert o["n_tasks"] == 2 and o["TF"] == 100 and o["CS"] == 75 and o["QP"] == 75 and o["EA"] == 50
    assert agg["per_domain"]["Neurology & Mental Health"]["CS"] == 50
    assert agg["per_domain"]["Medicine & Organ Systems"]["QP"] == 100
    assert o["tool_calls_per_task"]["sql"] == 2.5


@pytest.mark.parametrize("text,tf", [
    ("\\n\\n\\n\\n\\n\\n", False),  # a degenerate model's escapes: nothing can be read
    ("   ", False),
    ("Cockcroft-Gault: 58.3 mL/min", True),  # a readable 'Name: value' line
])
def test_tf_needs_a_readable_final_answer(text, tf):
    s = score_task(TASK, traj(None, final_answer_text=text))
    assert s.tf is tf
    assert score_task(TASK, traj(None, finished=False, final_answer_text="Cockcroft-Gault: 58.3")).tf is False
