"""One plausible patient per task: values inside the cited physiological limits (decoy history included),
history that trends instead of jumping, non-serum fluids kept out of serum labs, real ethnicity values,
paediatric age bands, and one patient state that every calculator of a task agrees on."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict

import pytest

from calcmate.ehr.materialize import ETHNICITIES, materialize_rows
from calcmate.synth import physiology as ph
from calcmate.synth.consistency import contradictions
from calcmate.tasks import CalcAnswer, CalcInput, Task


@pytest.fixture(scope="module")
def composed():
    """200+ tasks as the offline synthesizer composes them, each materialized (rows, no database)."""
    from calcmate.calculators.registry import registry
    from calcmate.synth.build import TaskCreationError, make_spec, to_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    tax = load_taxonomy(reg=reg)
    out = []
    for i in range(215):
        try:
            task = to_task(make_spec(tax, reg, "plaus", i), reg, "?")
        except TaskCreationError:
            continue
        rep, rows = materialize_rows(task, seed=i)
        out.append((task, rep, rows))
    assert len(out) >= 200
    return out


def _task(*answers: tuple[str, list[tuple[str, object]]], ids: tuple[str, ...] = ()) -> Task:
    calc = []
    for k, (name, inputs) in enumerate(answers):
        extra = {"calculator_id": ids[k]} if k < len(ids) and ids[k] else {}
        calc.append(CalcAnswer(order=k + 1, name=name, inputs=[CalcInput(field=f, value=v) for f, v in inputs], **extra))
    return Task(task_id="t", patient_id="PX", fuzzy_question="?", calculator_answers=calc)


# -- the limits table ---------------------------------------------------------------------------------
def test_limits_table_is_valid_and_every_row_cites_a_source(tmp_path):
    table = ph.load()
    assert len(table.limits) >= 60 and set(table.sources) == {"mimic_extract", "survivable", "calcmate"}
    for key, lim in table.limits.items():
        assert lim.source in table.sources and lim.min < lim.max, key
    assert (table.limits["ph"].min, table.limits["ph"].max) == (6.8, 7.8)
    bad = tmp_path / "p.yaml"
    bad.write_text("sources: {a: x}\nlimits:\n  sodium: {unit: mmol/L, min: 200, max: 100, step: 1, source: a}\n")
    with pytest.raises(ValueError, match="sodium"):
        ph.load(bad)
    bad.write_text("sources: {a: x}\nlimits:\n  sodium: {unit: mmol/L, min: 1, max: 2, step: 1, source: nowhere}\n")
    with pytest.raises(ValueError, match="unknown sources"):
        ph.load(bad)


def test_check_value_resolves_names_aliases_and_units():
    assert ph.check_value("pH", 7.31) is None and "outside" in ph.check_value("pH", 7.95)
    assert ph.check_value("Temperature", 98.6, "degF") is None
    assert ph.check_value("Temperature", 45, "°C") and ph.check_value("Temperature", 27.6, "°C")
    assert "potassium" in ph.check_value("Potassium", 58, "mEq/L")  # an infusate K+ read as serum
    assert ph.check_value("Sodium", 140, "mmol/L") is None and ph.check_value("Na", 300, "mEq/L")
    assert ph.check_value("Creatinine", 88.4, "µmol/L") is None and ph.check_value("Creatinine", 7000, "µmol/L")
    assert ph.check_value("Heart Rate", 400) and ph.check_value("Heart Rate", 72, "beats/min") is None
    assert ph.check_value("White blood cell count", 15.1, "×10³/µL") is None
    assert ph.check_value("Urine sodium", 193, "mEq/L") is None  # a urine value, judged as urine
    assert ph.resolve("Urine sodium") == "urine_sodium" and ph.resolve("Bicarbonate (HCO3-)") == "bicarbonate"
    assert ph.check_value("Infusate potassium", 93, "mEq/L") is None  # no serum row judges an infusate
    assert ph.check_value("Something unknown", 1e9) is None


def test_physiology_violations_reads_sql_rows():
    rows = [{"patient_id": "P1", "test_item_name": "pH", "test_result": "6.02", "unit": None, "sample_name": "Arterial blood"},
            {"patient_id": "P1", "test_item_name": "Potassium", "test_result": "4.1", "unit": "mmol/L", "sample_name": "Blood"},
            {"patient_id": "P1", "test_item_name": "Culture", "test_result": "Positive", "unit": None},
            {"patient_id": "P1", "temperature": "47.1", "heart_rate": "88", "weight": "70.2"},
            {"patient_id": "P1", "name": "Sodium", "value": 525, "unit": "mEq/L"}]
    v = ph.physiology_violations(rows)
    assert len(v) == 3 and "pH" in v[0] and "temperature" in v[1] and "Sodium" in v[2]


# -- the materializer ---------------------------------------------------------------------------------
def test_composed_patients_lie_inside_the_limits(composed):
    n_rows = 0
    for task, rep, rows in composed:
        stored = rows.get("laboratory_result", []) + rows.get("vital_signs", [])
        n_rows += len(stored)
        assert ph.physiology_violations(stored) == [], task.task_id
    assert n_rows > 5000  # decoy history and distractor patients included


def _series(rows):
    """(patient, item, sample) -> [(time, value, charted quantum)] oldest first, for labs and vitals."""
    out = defaultdict(list)

    def add(key, t, text, unit=None):
        k = ph.resolve(key[1], key[2])
        try:
            x = float(text)
            q = 10 ** -(len(str(text).split(".")[1]) if "." in str(text) else 0)
            if k is not None and unit:  # in the table's unit, so its step applies
                x, q = ph.canonical_value(k, x, unit), abs(ph.canonical_value(k, x + q, unit) - ph.canonical_value(k, x, unit))
        except (TypeError, ValueError):
            return
        out[key].append((t, x, q))

    for r in rows.get("laboratory_result", []):
        add((r["patient_id"], r["test_item_name"], r.get("sample_name")), r["report_time"], r["test_result"], r.get("unit"))
    for r in rows.get("vital_signs", []):
        for c in ("weight", "temperature", "heart_rate", "systolic_pressure", "height"):
            if r.get(c) is not None:
                add((r["patient_id"], c, None), r["measure_time"], r[c])
    return {k: sorted(v) for k, v in out.items()}


def test_history_trends_by_bounded_daily_steps(composed):
    """Weight, creatinine, pH and every other series move by at most the table's daily step between
    measurements (plus a charted digit), never by a fresh random draw."""
    checked = Counter()
    for task, rep, rows in composed:
        given = {p.source.split(":", 1)[1] for p in rep.placed if p.source.startswith(("lab:", "vital:"))}
        for (pid, item, sample), pts in _series(rows).items():
            key = ph.resolve(item, sample)
            if pid != rep.patient_id or key is None:
                continue
            lim = ph.limits()[key]
            for (t0, x0, q0), (t1, x1, q1) in zip(pts, pts[1:]):
                if item in given and t1 - t0 < dt.timedelta(hours=7):
                    continue  # consecutive values the task itself gives (before/after treatment)
                days = (t1 - t0).total_seconds() / 86400
                allowed = lim.max_step(max(abs(x0), abs(x1)), days) + max(q0, q1) + 1e-9
                assert abs(x1 - x0) <= allowed, (task.task_id, item, pts)
                checked[key] += 1
    assert checked["weight"] > 50 and checked["creatinine"] > 20 and checked["ph"] > 5, checked


def test_non_serum_fluids_are_never_serum_labs():
    task = _task(("Sodium correction", [("Infusate sodium", "513 mEq/L"), ("Infusate potassium", "93.6 mEq/L"),
                                        ("Sodium", "128 mEq/L")]),
                 ("FENa", [("Urine sodium", "40 mEq/L"), ("Drain fluid potassium", "8 mEq/L"),
                           ("Time between creatinine measurements", "9.55 h"), ("Serum creatinine", "1.4 mg/dL")]))
    rep, rows = materialize_rows(task)
    where = {p.field: (p.table, p.source) for p in rep.placed}
    assert where["Infusate sodium"][0] == where["Infusate potassium"][0] == "order_inpatient"
    assert where["Time between creatinine measurements"][0] != "laboratory_result"
    labs = {(r["test_item_name"], r["sample_name"]) for r in rows["laboratory_result"] if r["patient_id"] == rep.patient_id}
    assert ("Urine sodium", "Urine") in labs and ("Drain fluid potassium", "Drain fluid") in labs
    serum_k = [r["test_result"] for r in rows["laboratory_result"] if r["test_item_name"] == "Potassium"]
    assert "93.6" not in serum_k
    assert ph.physiology_violations(rows["laboratory_result"]) == []


@pytest.mark.parametrize("inputs, want", [
    ([("Black race", "Yes")], {"Black or African American"}),
    ([("Black race", "No")], set(ETHNICITIES) - {"Black or African American"}),
    ([("Ethnicity", "Caucasian")], {"Caucasian"}),
    ([("Race", "Black")], {"Black"}),  # a real value is kept as charted
])
def test_ethnicity_is_a_real_value_never_yes_or_no(inputs, want):
    rep, rows = materialize_rows(_task(("MDRD", inputs)))
    (me,) = [r for r in rows["patient_information"] if r["patient_id"] == rep.patient_id]
    assert me["ethnicity"] in want
    assert all(r["ethnicity"] not in ("Yes", "No") for r in rows["patient_information"])


@pytest.mark.parametrize("value, lo_days, hi_days", [
    ("<1 month", 0, 31), ("2–24 months", 60, 25 * 30.44 + 1), ("neonate", 0, 28), ("Newborn", 0, 28),
    ("< 28 days", 0, 28), ("1-5 years", 365, 6 * 365.25 + 1), (">= 65 years", 65 * 365.25, 81 * 365.25), ("<18", 0, 18 * 365.25),
])
def test_paediatric_and_neonatal_age_bands_materialize(value, lo_days, hi_days):
    for seed in range(5):
        rep, rows = materialize_rows(_task(("X", [("Age", value), ("Heart rate", "140 /min")])), seed=seed)
        (me,) = [r for r in rows["patient_information"] if r["patient_id"] == rep.patient_id]
        (visit,) = [r for r in rows["visit_inpatient"] if r["patient_id"] == rep.patient_id]
        now = max(r["measure_time"] for r in rows["vital_signs"]).date()
        assert lo_days <= (now - me["birth_date"]).days < hi_days, (value, me["birth_date"], now)
        if hi_days < 400:  # an infant's chart: infant weight and length, ward-mates of the same age
            w = [float(r["weight"]) for r in rows["vital_signs"] if r["patient_id"] == rep.patient_id and r.get("weight")]
            assert w and max(w) < 12, w
            assert visit["patient_age_unit"] in ("days", "months")
        assert ph.physiology_violations(rows["vital_signs"] + rows["laboratory_result"]) == []


# -- one patient state ----------------------------------------------------------------------------------
def test_composed_tasks_have_no_contradictions_and_share_findings(composed):
    from calcmate.synth.profile import default_model

    model = default_model()
    shared = Counter()
    for task, _, _ in composed:
        assert contradictions(task) == [], task.task_id
        calcs_per_finding = defaultdict(set)
        for a in task.calculator_answers:
            for x in a.inputs:
                yn = str(x.value) in ("Yes", "No")
                b = model.finding_binding(x.field, "bool" if yn else "choice", None if yn else [str(x.value)])
                if b is not None:
                    calcs_per_finding[b.finding].add(a.name)
        shared.update(f for f, cs in calcs_per_finding.items() if len(cs) > 1)
    assert sum(shared.values()) >= 15, shared  # the check is not vacuous: findings read by 2+ calculators occurred


def test_contradictions_catch_planted_disagreements():
    # mutually exclusive findings, matched on the free-text field of any task
    assert contradictions(_task(("Wells DVT", [("Active cancer", "Yes")]), ("Caprini", [("Present or previous malignancy", "No")])))
    assert not contradictions(_task(("Wells DVT", [("Active cancer", "No")]), ("Caprini", [("Present or previous malignancy", "Yes")])))
    assert contradictions(_task(("APACHE II", [("Chronic renal failure", "No")]), ("SOFA", [("Renal replacement therapy", "Yes")])))
    assert contradictions(_task(("Charlson", [("Solid tumor", "Metastatic")]), ("PSI", [("Neoplastic disease", "No")])))
    assert contradictions(_task(("ECOG", [("Patient description", "Dead")])))
    assert contradictions(_task(("Barthel", [("Stairs", "Independent")]), ("ECOG", [("Patient description", "Completely disabled; cannot carry on any self-care; totally confined to bed or chair")])))
    # a finding against a measurement, a criterion against a measurement, one quantity stated twice
    ids = ("gcs", "barthel_index")
    coma = [("Best eye response", "None"), ("Best verbal response", "None"), ("Best motor response", "None")]
    assert contradictions(_task(("GCS", coma), ("Barthel", [("Stairs", "Independent")]), ids=ids))
    assert not contradictions(_task(("GCS", coma), ("Barthel", [("Stairs", "Unable")]), ids=ids))
    assert contradictions(_task(("APACHE II", [("Acute renal failure", "Yes"), ("Serum creatinine", "0.7 mg/dL")]), ids=("apache_ii",)))
    assert contradictions(_task(("qSOFA", [("Systolic blood pressure ≤ 100 mmHg", "Yes")]),
                                ("TRISS", [("Systolic blood pressure", "144 mmHg")]), ids=("qsofa", "triss")))
    assert contradictions(_task(("SOFA", [("Serum creatinine", "1.2 mg/dL")]), ("APACHE II", [("Serum creatinine", "3.4 mg/dL")]),
                                ids=("sofa", "apache_ii")))
    assert not contradictions(_task(("SOFA", [("Serum creatinine", "1.2 mg/dL")]),
                                    ("APACHE II", [("Serum creatinine", "106 µmol/L")]), ids=("sofa", "apache_ii")))
    assert contradictions(_task(("CHA2DS2-VASc", [("Age", "74 years"), ("Sex", "Male")]),
                                ("HAS-BLED", [("Age", "81 years")]), ids=("cha2ds2_vasc", "has_bled")))
