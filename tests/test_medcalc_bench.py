"""MedCalc-Bench loader, entity mapping and registry solver, run over the fixture CSVs."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from calcmate.calculators import registry
from calcmate.medcalc_bench import (
    Answer,
    RegistrySolver,
    entities_to_inputs,
    evaluate,
    parse_entities,
    read_csv,
    score,
)

FIX = Path(__file__).parent / "fixtures" / "medcalc_bench"
ROOT = Path(__file__).resolve().parents[1]

# The formula calculators (this module's part of the registry) and the rows where the label rests on an
# extracted entity in an impossible unit, which the registry refuses (docs/known-label-issues.md).
FORMULA_IDS = {2, 3, 5, 6, 7, 9, 10, 11, 13, 19, 22, 23, 24, 26, 30, 31, 38, 39, 40, 44, 49,
               56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69}
ENTITY_UNIT_ERRORS = {"284", "780", "790", "824"}
# Calculators whose v1.0 labels carry documented bugs that the relabelling fixed.
V1_LABEL_BUGS = {13, 23}


@pytest.fixture(scope="module")
def relabelled():
    return read_csv(FIX / "dev_relabelled.csv")


@pytest.fixture(scope="module")
def relabelled_report(relabelled):
    return evaluate(relabelled, RegistrySolver())


def test_read_csv_types_every_row(relabelled):
    assert len(relabelled) == 263
    ids = {int(r["calculator_id"]) for r in csv.DictReader(open(FIX / "calculators.tsv"), delimiter="\t")}
    assert {r.calculator_id for r in relabelled} == ids
    r = relabelled[0]
    assert r.calculator_id == 2 and r.output_type == "decimal"
    assert r.entities["age"] == [41, "years"]
    assert r.v1_truth is not None


def test_read_csv_rejects_a_non_benchmark_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="Relevant Entities"):
        read_csv(p)


def test_parse_entities_errors_name_the_field():
    with pytest.raises(ValueError, match="Relevant Entities"):
        parse_entities("{'age': [41, 'years'")
    with pytest.raises(ValueError, match="not a dict"):
        parse_entities("[1, 2]")


def test_formula_calculators_reach_97_percent_on_relabelled(relabelled, relabelled_report):
    rows = [(r, res) for r, res in zip(relabelled, relabelled_report.rows) if r.calculator_id in FORMULA_IDS]
    assert len(rows) == 163
    acc = sum(res.correct for _, res in rows) / len(rows)
    assert acc >= 0.97, acc
    wrong = {r.row_id for r, res in rows if not res.correct}
    assert wrong == ENTITY_UNIT_ERRORS  # every other row agrees with the maintained implementation
    for r, res in rows:
        if r.row_id in ENTITY_UNIT_ERRORS:
            err = next(e for e in relabelled_report.errors if e.row == r.row_id)
            assert "below the allowed minimum" in err.reason


def test_per_calculator_accuracy_for_formula_calculators(relabelled_report, relabelled):
    names = {r.calculator_name: r.calculator_id for r in relabelled}
    for name, stats in relabelled_report.per_calculator.items():
        if names[name] in FORMULA_IDS:
            floor = 0.5 if names[name] in {19, 65, 66, 67} else 1.0
            assert stats.accuracy >= floor, (name, stats)


def test_unsolvable_rows_carry_reasons_and_never_crash(relabelled_report, relabelled):
    registered = {c.medcalc_bench_id for c in registry() if c.medcalc_bench_id}
    assert relabelled_report.overall.n == len(relabelled)
    for e in relabelled_report.errors:
        assert e.reason.strip()
    unregistered = [r for r in relabelled if r.calculator_id not in registered]
    reasons = {e.row: e.reason for e in relabelled_report.errors}
    for r in unregistered:
        assert "no calculator registered" in reasons[r.row_id]


def test_v1_labels_disagree_only_where_documented():
    rows = [r for r in read_csv(FIX / "dev.csv") if r.calculator_id in FORMULA_IDS]
    report = evaluate(rows, RegistrySolver())
    wrong = {r.calculator_id for r, res in zip(rows, report.rows) if not res.correct and r.row_id not in ENTITY_UNIT_ERRORS}
    assert wrong <= V1_LABEL_BUGS | {66}, wrong  # 66: one v1 row rounded to -0.75 vs -0.8 (see label notes)
    assert 0.85 <= report.overall.accuracy < 0.97


def _row(relabelled, cid, **changes):
    base = next(r for r in relabelled if r.calculator_id == cid)
    return dataclasses.replace(base, **changes)


def test_unknown_entity_is_ignored_and_noted_missing_input_is_unsolvable(relabelled):
    solver = RegistrySolver()
    ans = solver.solve(_row(relabelled, 39, entities_text="{'Sodium': [140, 'mEq/L'], 'Potassium': [4, 'mEq/L'], "
                                                           "'Chloride': [100, 'mEq/L'], 'Bicarbonate': [24, 'mEq/L']}"))
    assert ans.solved and ans.value == pytest.approx(16.0)  # Na − (Cl + HCO₃); potassium is not in the formula
    assert len(ans.notes) == 1 and "'Potassium'" in ans.notes[0] and "ignored" in ans.notes[0]
    # an alias gap on a measured value still surfaces: the required input is missing
    ans = solver.solve(_row(relabelled, 39, entities_text="{'Sodium': [140, 'mEq/L'], 'Chloride': [100, 'mEq/L'], "
                                                           "'Bicarb (typo)': [24, 'mEq/L']}"))
    assert not ans.solved and "bicarbonate" in ans.reason and "missing" in ans.reason
    assert any("Bicarb (typo)" in n for n in ans.notes)
    ans = solver.solve(_row(relabelled, 39, entities_text="{'Sodium': [140, 'mEq/L'], 'Chloride': [100, 'mEq/L']}"))
    assert not ans.solved and "bicarbonate" in ans.reason and "missing" in ans.reason
    ans = solver.solve(_row(relabelled, 39, entities_text="{'Sodium': [140, 'furlongs'], 'Chloride': [100, 'mEq/L'], "
                                                           "'Bicarbonate': [24, 'mEq/L']}"))
    assert not ans.solved and "sodium" in ans.reason
    ans = solver.solve(_row(relabelled, 39, entities_text="not a dict"))
    assert not ans.solved and "Relevant Entities" in ans.reason
    ans = solver.solve(_row(relabelled, 39, calculator_id=999))
    assert not ans.solved and "999" in ans.reason
    assert score(_row(relabelled, 39), ans) is False


def test_duplicate_entities_merge_yes_no_and_refuse_conflicting_values(relabelled):
    solver = RegistrySolver()
    rcri = "{'History of cerebrovascular disease': %s, 'Cerebrovascular disease history': %s, " \
           "'Pre-operative creatinine': [1.0, 'mg/dL']}"
    ans = solver.solve(_row(relabelled, 17, entities_text=rcri % (True, False)))
    assert ans.value == 1 and "scored present" in ans.notes[0]
    ans = solver.solve(_row(relabelled, 17, entities_text=rcri % (False, False)))
    assert ans.value == 0 and ans.notes == ()
    ans = solver.solve(_row(relabelled, 39, entities_text="{'Sodium': [140, 'mEq/L'], 'sodium': [135, 'mEq/L'], "
                                                           "'Chloride': [100, 'mEq/L'], 'Bicarbonate': [24, 'mEq/L']}"))
    assert not ans.solved and "twice" in ans.reason


def test_entity_notes_on_the_dev_sample_are_only_the_documented_ones(relabelled_report):
    """Pins every ignored or merged entity on the dev sample, so a new alias gap fails here."""
    noted = {(n.row, n.reason.split(":")[0] if n.reason.startswith("ignored") else "merged")
             for n in relabelled_report.entity_notes}
    pecarn_ams = "ignored entity 'Altered mental status for PECARN head injury criteria'"
    assert noted == {
        *((r, "merged") for r in ("241", "242", "246", "251", "256")),  # RCRI: two cerebrovascular entities
        ("460", pecarn_ams), ("463", pecarn_ams),  # FeverPAIN rows with PECARN entities
        ("463", "ignored entity 'Occipital, parietal or temporal scalp hematoma; history of level of conciousness "
                "(LOC) ≥5 sec; not acting normally per parent or severe mechanism of injury?'"),
    }


def test_translated_entities(relabelled):
    reg = registry()
    steroid = reg.by_medcalc_id(24)
    inp = entities_to_inputs(steroid, {"input steroid": ["PredniSONE PO", 45.802, "mg"], "target steroid": "Hydrocortisone IV"})
    assert inp == {"from_steroid": "PredniSONE PO", "dose": [45.802, "mg"], "to_steroid": "Hydrocortisone IV"}
    assert steroid(inp).value == pytest.approx(183.21, abs=0.01)
    mme = reg.by_medcalc_id(49)
    inp = entities_to_inputs(mme, {"FentANYL patch Dose": [40, "mg"], "FentANYL patch Dose Per Day": [1, "per day"]})
    assert inp == {"fentanyl_patch_dose": 40, "fentanyl_patch_doses_per_day": 1}
    assert mme(inp).value == pytest.approx(96.0)  # 40 mcg/hr × 2.4
    cg = reg.by_medcalc_id(2)
    # BMI 23.4 (normal): the lower of ideal (52.4 kg) and actual (60 kg) weight
    inp = entities_to_inputs(cg, {"sex": "Female", "age": [47, "years"], "weight": [60.0, "kg"],
                                  "height": [160.0, "cm"], "creatinine": [0.9, "mg/dL"]})
    assert inp["weight"] == pytest.approx(52.4, abs=0.1)
    # BMI 31 (obese): adjusted body weight
    inp = entities_to_inputs(cg, {"sex": "Male", "age": [60, "years"], "weight": [100.0, "kg"],
                                  "height": [180.0, "cm"], "creatinine": [1.0, "mg/dL"]})
    assert inp["weight"] == pytest.approx(75.0 + 0.4 * 25.0, abs=0.2)


def test_score_uses_the_row_rules(relabelled):
    ga = next(r for r in relabelled if r.calculator_id == 69)
    assert score(ga, RegistrySolver().solve(ga))
    assert not score(ga, Answer(value=(0, 0)))
    edd = next(r for r in relabelled if r.calculator_id == 13)
    assert score(edd, Answer(value=edd.truth))
    assert not score(edd, Answer(value="01/01/1999"))


def _load_eval():
    spec = importlib.util.spec_from_file_location("eval_medcalc_bench", ROOT / "eval" / "medcalc_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # pydantic resolves the config model's annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


def test_eval_script_writes_the_report(tmp_path, capsys):
    mod = _load_eval()
    out = tmp_path / "report.json"
    assert mod.main(["--solver", "registry", "--csv", str(FIX / "dev_relabelled.csv"), "--out", str(out),
                     "--set", "calculator_ids=[5,6]"]) == 0
    data = json.loads(out.read_text())
    assert set(data) >= {"overall", "per_calculator", "errors"}
    assert data["overall"] == {"n": 10, "correct": 10, "accuracy": 1.0}
    assert set(data["per_calculator"]) == {"Mean Arterial Pressure (MAP)", "Body Mass Index (BMI)"}
    assert "Mean Arterial Pressure" in capsys.readouterr().out


def test_eval_script_model_solver_is_a_clear_seam(tmp_path, capsys):
    mod = _load_eval()
    assert mod.main(["--solver", "model", "--csv", str(FIX / "dev.csv")]) == 2
    assert "needs a model" in capsys.readouterr().err


# -- worked examples are not benchmark rows ------------------------------------------------------------
def _numbers(x, out: set[float]) -> set[float]:
    if isinstance(x, bool) or x is None:
        return out
    if isinstance(x, (int, float)):
        out.add(round(abs(float(x)), 3))
    elif isinstance(x, str):
        out.update(round(float(m), 3) for m in re.findall(r"\d+(?:\.\d+)?", x))
    elif isinstance(x, dict):
        for y in x.values():
            _numbers(y, out)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _numbers(y, out)
    return out


def _copies(example_numbers: set[float], case_numbers: set[float]) -> bool:
    """Every (or all but one) of an example's numbers is in the benchmark case: a copied case."""
    return len(example_numbers) >= 2 and len(example_numbers & case_numbers) >= max(2, len(example_numbers) - 1)


def _same_text(expected, answer) -> bool:
    """A category answer (e.g. an ABG sentence) carries no numbers: compare its words instead."""
    words = lambda x: re.findall(r"[a-z0-9]+", str(x).casefold())  # noqa: E731
    return isinstance(expected, str) and bool(words(expected)) and words(expected) == words(answer)


def test_worked_examples_do_not_copy_benchmark_cases():
    """Examples come from the primary reference or are hand-computed on fresh values: a benchmark row used
    as a worked example would leak test cases into anything built from the registry."""
    reg = registry()
    rows = read_csv(FIX / "dev.csv")
    tasks = [json.loads(line) for line in open(ROOT / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl")]
    answers = [(t["task_id"], reg.find(a["name"]), _numbers([i.get("value") for i in a["inputs"]], set()),
                _numbers(a["final_answer"], set()), a["final_answer"]) for t in tasks for a in t["calculator_answers"]]
    copied = []
    for calc in reg:
        for ex in calc.examples:
            nums = _numbers(dict(ex.inputs), set())
            for r in rows:
                if r.calculator_id == calc.medcalc_bench_id and _copies(nums, _numbers(r.entities, set())):
                    copied.append((calc.id, f"MedCalc-Bench row {r.row_id}"))
            expected = _numbers(ex.expected, set()) if not hasattr(ex.expected, "year") else set()
            for task_id, found, task_nums, answer_nums, answer in answers:
                # point-score choice labels carry small numbers ("+5"), so a copy must also share the answer
                if found is calc and _copies(nums, task_nums) and (expected & answer_nums or
                                                                   _same_text(ex.expected, answer)):
                    copied.append((calc.id, f"MedMCP-Calc task {task_id}"))
    assert not copied, copied
