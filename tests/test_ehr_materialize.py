"""The materializer places every input where a SQL query finds it, deterministically, on any task."""

from __future__ import annotations

import asyncio
import json
import random
import re
import string
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
    """The documented convention: a lab or vital's query returns every measurement, newest first;
    the ground truth is the newest, after earlier decoys. An item given several values in one task
    (sodium before/after) holds them as its newest measurements, in calculator order."""
    db, reports = materialized_dev
    checked = 0
    with db.connect(readonly=True) as conn:
        for rep in reports.values():
            series: dict[str, list[str]] = {}
            for p in rep.placed:
                if p.source.startswith(("lab:", "vital:")) and p.column != "normal_high":
                    series.setdefault(p.source, [])
                    if p.stored not in series[p.source]:
                        series[p.source].append(p.stored)
            for source, truth in series.items():
                kind, name = source.split(":", 1)
                p = next(p for p in rep.placed if p.source == source)
                cur = conn.execute(p.query)
                cols = [d.name for d in cur.description]
                rows = cur.fetchall()
                if kind == "lab":
                    hist = [r[cols.index("test_result")] for r in rows if r[cols.index("test_item_name")] == name]
                    times = [r[cols.index("report_time")] for r in rows if r[cols.index("test_item_name")] == name]
                else:
                    hist = [r[cols.index(name)] for r in rows if r[cols.index(name)] is not None]
                    times = [r[cols.index("measure_time")] for r in rows if r[cols.index(name)] is not None]
                assert times == sorted(times, reverse=True), p.query
                assert hist[: len(truth)] == truth[::-1], (source, hist, truth)
                assert len(hist) > len(truth), f"{source}: no earlier decoy measurement"
                checked += 1
    assert checked > 40


def _hidden_identifiers(conn) -> set[str]:
    """Every row id in the EHR (report_id, visit_id, report_item_id, vs_id, ...): what no agent can know
    before a query result shows it. patient_id is given in the question."""
    cols = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
        "AND (column_name LIKE '%\\_id' OR column_name IN ('inpatient_no', 'visit_card_no')) AND column_name <> 'patient_id'"
    ).fetchall()
    ids: set[str] = set()
    for table, col in cols:
        ids |= {str(v) for (v,) in conn.execute(f"SELECT DISTINCT {col} FROM {table} WHERE {col} IS NOT NULL")}
    return ids


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?")


def test_retrievals_group_inputs_and_pin_no_hidden_identifier(materialized_dev, dev_tasks):
    db, reports = materialized_dev
    with db.connect(readonly=True) as conn:
        ids = _hidden_identifiers(conn)
    assert len(ids) > 100
    n_placed = n_queries = 0
    for task in dev_tasks:
        rep = reports[task.task_id]
        order = {a.name: a.order for a in task.calculator_answers}
        owner = [None] * len(rep.placed)
        for k, r in enumerate(rep.retrievals):
            assert r.inputs, r
            assert r.calculator == min((rep.placed[i].calculator for i in r.inputs), key=order.get), r
            for i in r.inputs:
                assert owner[i] is None, f"input {i} in two retrievals"
                owner[i] = k
                assert rep.placed[i].query == r.sql
            assert not _TIMESTAMP.search(r.sql) and not [v for v in ids if f"'{v}'" in r.sql], r.sql
            assert f"'{rep.patient_id}'" in r.sql
        assert None not in owner
        assert len({r.sql for r in rep.retrievals}) == len(rep.retrievals)
        n_placed, n_queries = n_placed + len(rep.placed), n_queries + len(rep.retrievals)
    assert n_queries * 3 < n_placed  # one query serves several inputs


def test_oracle_sql_uses_only_identifiers_it_has_seen(materialized_dev, dev_tasks, toolbox):
    """The oracle (the synthesizer's scripted teacher) replays the retrievals through the real tools:
    every hidden id or exact timestamp in a query must have appeared in an earlier SQL result, each
    query runs once, and together they show every input."""
    from calcmate.agent.episode import run_episode
    from calcmate.agent.oracle import OraclePolicy
    from calcmate.agent.protocols import NativeProtocol
    from calcmate.scoring.metrics import SqlEvidence

    db, reports = materialized_dev
    with db.connect(readonly=True) as conn:
        ids = _hidden_identifiers(conn)

    async def episodes():
        async with toolbox.session() as tb:
            return [await run_episode(t, OraclePolicy(), tb, NativeProtocol(), context={"materialized": reports[t.task_id]})
                    for t in dev_tasks]

    checked = 0
    for task, traj in zip(dev_tasks, asyncio.run(episodes())):
        assert traj.finished, traj.stop_reason
        calls = [c for c in traj.tool_calls if c.tool in ("run_sql", "run_read_only_sql")]
        queries = [c.arguments["query"] for c in calls]
        # every retrieval runs (once it succeeds); a recovery (a failed or empty query, then the fix) may precede it
        assert {r.sql for r in reports[task.task_id].retrievals} <= set(queries)
        ok = [q for c, q in zip(calls, queries) if not c.is_error]
        assert len(ok) == len(set(ok)), ok
        seen = ""
        for c in calls:
            q = c.arguments["query"]
            for literal in [v for v in ids if f"'{v}'" in q] + _TIMESTAMP.findall(q):
                assert literal in seen, f"{task.task_id}: {literal!r} in {q!r} before any result showed it"
            seen += "\n" + c.result
            checked += 1
        ev = SqlEvidence(traj)
        missing = [(i.field, i.value) for a in task.calculator_answers for i in a.inputs if not ev.contains(i.value, i.field)]
        assert not missing, f"{task.task_id}: {missing}"
    assert checked > 50


def test_infant_age_is_stored_in_the_unit_the_task_gives(pg_server):
    """An age in days (a former preterm infant) is the visit's age in days, consistent with the birth
    date, so a query shows the task's number; ages in years stay in years."""
    task = Task(task_id="t_infant", patient_id="PI1", fuzzy_question="?", calculator_answers=[
        CalcAnswer(order=1, name="X", inputs=[CalcInput(field="date_of_birth", value="2025-09-20"),
                                              CalcInput(field="current_date", value="2025-12-15"),
                                              CalcInput(field="chronological_age_days", value=86)]),
        CalcAnswer(order=2, name="Y", inputs=[CalcInput(field="Age (weeks)", value="12 weeks")])])
    adult = Task(task_id="t_adult", patient_id="PA1", fuzzy_question="?", calculator_answers=[
        CalcAnswer(order=1, name="X", inputs=[CalcInput(field="Age", value="67 years")])])
    db = pg_server.create_database()
    try:
        with db.connect() as conn:
            rep = materialize(task, conn, seed=0)
            age = {p.field: p for p in rep.placed if p.column == "patient_age"}
            assert (age["chronological_age_days"].stored, age["chronological_age_days"].match) == ("86", "number")
            assert age["Age (weeks)"].match == "derived"  # one visit age: the first exact age wins
            rows = conn.execute(age["chronological_age_days"].query).fetchall()
            assert [(r[3], r[4]) for r in rows] == [(86, "days")] and str(rows[0][1]) == "2025-09-20"
            rep = materialize(adult, conn, seed=0)
            assert conn.execute(rep.placed[0].query).fetchone()[3:5] == (67, "years")
            toddler = Task(task_id="t_toddler", patient_id="PT1", fuzzy_question="?", calculator_answers=[
                CalcAnswer(order=1, name="X", inputs=[CalcInput(field="Age", value="16.1 months")])])
            rep = materialize(toddler, conn, seed=0)  # an integer age column can't hold 16.1: the note does
            (p,) = rep.placed
            assert p.table == "examination_report" and "16.1 months" in _rows_text(conn, p.query)[1]
            assert conn.execute("SELECT patient_age, patient_age_unit FROM visit_inpatient WHERE patient_id = 'PT1'").fetchone() == (16, "months")
    finally:
        pg_server.drop_database(db.name)


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


def test_fluids_given_are_not_labs_and_crp_is_not_total_protein(pg_server):
    task = Task(task_id="t_fluids", patient_id="PF1", fuzzy_question="?", calculator_answers=[
        CalcAnswer(order=1, name="X", inputs=[CalcInput(field="Ringer’s lactate", value="1500 mL"),
                                              CalcInput(field="5%, 20%, 25% albumin", value="0 mL"),
                                              CalcInput(field="Serum albumin", value="3.1 g/dL"),
                                              CalcInput(field="C-reactive protein, IU/L", value="38 mg/L")])])
    db = pg_server.create_database()
    try:
        rep = materialize(task, db, seed=0)
        where = {p.field: (p.table, p.source) for p in rep.placed}
        assert where["Ringer’s lactate"][0] == where["5%, 20%, 25% albumin"][0] == "order_inpatient"
        assert where["Serum albumin"] == ("laboratory_result", "lab:Albumin")
        assert where["C-reactive protein, IU/L"] == ("laboratory_result", "lab:C-reactive protein")
    finally:
        pg_server.drop_database(db.name)


class _ProseHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that rewrites "field: value" lines as prose keeping only
    the values, so no field word is left for a keyword query to find."""

    def log_message(self, *a):
        pass

    def do_POST(self):  # noqa: N802
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        lines = req["messages"][-1]["content"].split("\n\n", 1)[1].splitlines()
        prose = "Documented today: " + "; ".join(line.split(": ", 1)[1] for line in lines) + "."
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": req["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": prose}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_llm_prose_keeps_every_input_findable(pg_server, dev_tasks):
    from calcmate.ehr.materialize import LLMConfig

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ProseHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    db = pg_server.create_database()
    try:
        llm = LLMConfig(base_url=f"http://127.0.0.1:{httpd.server_port}/v1", model="prose")
        task = next(t for t in dev_tasks if t.task_id.startswith("medmcp-calc_009"))  # exam questionnaires only
        with db.connect() as conn:
            rep = materialize(task, conn, seed=0, llm=llm)
            text = " ".join(r[0] for r in conn.execute("SELECT exam_findings FROM examination_report WHERE patient_id = %s",
                                                       (rep.patient_id,)))
            assert text.count("Documented today") >= 3 and "Bradykinesia" not in text  # the prose was kept
            assert not rep.unplaced
            for p in rep.placed:
                _, found = _rows_text(conn, p.query)
                assert p.stored in found, (p.field, p.query)
    finally:
        httpd.shutdown()
        pg_server.drop_database(db.name)


def test_neonatal_and_infant_age_bands_materialize(pg_server):
    """Age bands below a year ("<1 month", "2–24 months", "neonate") give a visit age in days or months
    inside the band (once an empty randrange aborted the whole run)."""
    db = pg_server.create_database()
    try:
        with db.connect() as conn:
            for k, (band, lo, hi) in enumerate([("<1 month", 0, 31), ("2–24 months", 60, 761), ("Neonate", 0, 28)]):
                task = Task(task_id=f"t_band{k}", patient_id=f"PB{k}", fuzzy_question="?", calculator_answers=[
                    CalcAnswer(order=1, name="X", inputs=[CalcInput(field="Age", value=band),
                                                          CalcInput(field="Weight", value="3.4 kg")])])
                rep = materialize(task, conn, seed=k)
                (p,) = [p for p in rep.placed if p.field == "Age"]
                assert p.column == "patient_age" and p.match == "derived"
                age, unit, born = conn.execute(
                    "SELECT v.patient_age, v.patient_age_unit, p.birth_date FROM visit_inpatient v JOIN patient_information p "
                    "USING (patient_id) WHERE patient_id = %s", (rep.patient_id,)).fetchone()
                days = age * {"days": 1, "months": 30.44, "years": 365.25}[unit]
                assert unit in ("days", "months") and lo <= days < hi, (band, age, unit, born)
    finally:
        pg_server.drop_database(db.name)
