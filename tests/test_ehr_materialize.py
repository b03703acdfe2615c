"""The materializer places every input where a SQL query finds it, deterministically, on any task."""

from __future__ import annotations

import random
import string

import pytest

from calcmate.ehr.materialize import materialize
from calcmate.tasks import CalcAnswer, CalcInput, Task
from calcmate.units import parse_quantity


def _rows_text(conn, query: str) -> tuple[list, str]:
    rows = conn.execute(query).fetchall()
    return rows, " | ".join(str(v) for r in rows for v in r)


def _consistent(p) -> bool:
    """``stored`` relates to the ground-truth value as the placement claims."""
    v = p.value if isinstance(p.value, str) else str(p.value)
    if p.match == "verbatim":
        return v in p.stored or p.stored.lower() in v.lower()
    if p.match == "number":
        return float(p.stored) == pytest.approx(parse_quantity(v)[0])
    return p.match in ("converted", "derived")


def test_every_dev_input_is_placed_and_found_by_its_query(materialized_dev, dev_tasks):
    db, reports = materialized_dev
    with db.connect(readonly=True) as conn:  # what the agent's role sees
        for task in dev_tasks:
            rep = reports[task.task_id]
            assert rep.unplaced == []
            n_inputs = sum(len(a.inputs) for a in task.calculator_answers)
            assert len(rep.placed) == n_inputs
            for p in rep.placed:
                rows, text = _rows_text(conn, p.query)
                assert rows, f"{task.task_id}: no row for {p.field!r} via {p.query}"
                assert p.stored in text, f"{p.field!r}: {p.stored!r} not in {text[:300]!r}"
                assert _consistent(p), p


def test_latest_measurement_is_the_ground_truth(materialized_dev, dev_tasks):
    """The documented convention: a lab with one truth value is its most recent measurement,
    and earlier decoy measurements exist."""
    db, reports = materialized_dev
    checked = 0
    with db.connect(readonly=True) as conn:
        for rep in reports.values():
            labs = [p for p in rep.placed if p.kind == "lab" and p.column == "test_result" and "LIMIT 1" in p.query]
            for p in labs:
                name = conn.execute(p.query).fetchone()[0]
                hist = conn.execute(
                    "SELECT test_result FROM laboratory_result WHERE patient_id = %s AND test_item_name = %s ORDER BY report_time",
                    (rep.patient_id, name)).fetchall()
                assert len(hist) >= 2 and hist[-1][0] == p.stored
                checked += 1
    assert checked > 20


def test_distractor_patients_share_the_tables(materialized_dev):
    db, reports = materialized_dev
    rep = next(iter(reports.values()))
    with db.connect() as conn:
        n = conn.execute("SELECT count(DISTINCT patient_id) FROM laboratory_result").fetchone()[0]
        assert n > len(reports)
        for d in rep.distractor_patients:
            assert conn.execute("SELECT count(*) FROM patient_information WHERE patient_id = %s", (d,)).fetchone()[0] == 1


def test_deterministic_per_seed_and_rerunnable(pg_server, dev_tasks):
    task = dev_tasks[0]
    db = pg_server.create_database()
    try:
        with db.connect() as conn:
            dump = lambda: conn.execute(  # noqa: E731
                "SELECT test_item_name, test_result, report_time FROM laboratory_result ORDER BY 1, 3, 2").fetchall()
            r1 = materialize(task, conn, seed=7)
            a = dump()
            r2 = materialize(task, conn, seed=7)  # rerun replaces the same rows
            assert dump() == a and r1.to_dict() == r2.to_dict()
            materialize(task, conn, seed=8)
            assert dump() != a
    finally:
        pg_server.drop_database(db.name)


_WORDS = ["serum", "level", "score", "history", "finding", "assessment", "patient", "reported", "left", "grade"]
_LABS = [("Sodium", "mEq/L", 120, 160), ("Creatinine", "mg/dL", 0.4, 6), ("Hemoglobin", "g/dL", 6, 17),
         ("Potassium", "mmol/L", 2.5, 6.5), ("Albumin", "g/dL", 1.5, 5), ("Platelet count", "x10^9/L", 20, 500)]
_VITALS = [("Heart rate", "beats/min", 40, 160), ("Systolic blood pressure", "mm Hg", 70, 210),
           ("Temperature", "°C", 35, 41), ("Weight", "kg", 40, 140), ("Respiratory rate", "breaths/min", 8, 40)]


def _random_task(rng: random.Random, k: int) -> Task:
    answers = []
    for order in range(1, rng.randint(2, 5)):
        inputs = []
        for _ in range(rng.randint(1, 8)):
            kind = rng.random()
            if kind < 0.3:
                name, unit, lo, hi = rng.choice(_LABS)
                dec = rng.choice([0, 1])
                inputs.append(CalcInput(field=name, value=f"{round(rng.uniform(lo, hi), dec):g} {unit}"))
            elif kind < 0.5:
                name, unit, lo, hi = rng.choice(_VITALS)
                inputs.append(CalcInput(field=name, value=f"{round(rng.uniform(lo, hi))} {unit}"))
            elif kind < 0.6:
                inputs.append(CalcInput(field=rng.choice(["Age", "Age (years)"]), value=rng.choice([rng.randint(1, 99), f"{rng.randint(18, 90)} years", "65-74", "Adult"])))
            elif kind < 0.65:
                inputs.append(CalcInput(field="Sex", value=rng.choice(["Male", "Female"])))
            else:  # free-text field never seen before
                fld = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 5))) + f" {''.join(rng.choices(string.ascii_lowercase, k=5))}"
                val = rng.choice(["Yes", "No", f"{rng.randint(0, 9)} (+{rng.randint(0, 3)})", "Moderate, intermittent",
                                  f"{rng.uniform(0, 100):.1f} %", "Grade II; see note (x3)", "O'Brien's sign: absent"])
                inputs.append(CalcInput(field=fld, value=val, score=rng.choice([None, 0, 1, 2])))
        answers.append(CalcAnswer(order=order, name=f"Calc {order}", inputs=inputs))
    return Task(task_id=f"rand_{k}", patient_id=f"PR{k:04d}", fuzzy_question="?", calculator_answers=answers)


def test_unseen_random_tasks_are_fully_placed(pg_server):
    rng = random.Random(1234)
    db = pg_server.create_database()
    try:
        with db.connect() as conn:
            for k in range(25):
                task = _random_task(rng, k)
                rep = materialize(task, conn, seed=k)
                assert not rep.unplaced, rep.unplaced
                assert len(rep.placed) == sum(len(a.inputs) for a in task.calculator_answers)
                for p in rep.placed:
                    rows, text = _rows_text(conn, p.query)
                    assert rows and p.stored in text, (p, text[:200])
                    assert _consistent(p), p
    finally:
        pg_server.drop_database(db.name)


def test_empty_values_are_reported_unplaced(pg_server):
    task = Task(task_id="t_empty", patient_id="PE1", fuzzy_question="?", calculator_answers=[
        CalcAnswer(order=1, name="X", inputs=[CalcInput(field="Sodium", value="140 mEq/L"), CalcInput(field="Notes", value="  ")])])
    db = pg_server.create_database()
    try:
        rep = materialize(task, db, seed=0)
        assert [u.field for u in rep.unplaced] == ["Notes"] and "empty" in rep.unplaced[0].reason
        assert len(rep.placed) == 1
    finally:
        pg_server.drop_database(db.name)
