"""The patient materializer: a task's calculator inputs -> realistic EHR rows that SQL can find.

ONE code path for synthesized tasks (data_gen) and benchmark tasks (eval): it reads only the
MedMCP-Calc ``calculator_answers[].inputs`` (free-text ``field``, ``value`` with units, optional
``score``), never task ids or calculator identities, and places each input by rules
(``calcmate.ehr.lexicon``):

| input                                   | where                                                        |
|-----------------------------------------|--------------------------------------------------------------|
| labs (numeric, lab name)                | laboratory_result: test_item_name, test_result, unit, range  |
| vitals (numeric, vital name)            | vital_signs (TEXT values, canonical units)                   |
| age, sex, ethnicity, date of birth      | patient_information / visit_inpatient                        |
| history, diagnoses, habits, medications | admission_record sections (+ diagnostic_record for "Yes")    |
| doses of named drugs                    | order_inpatient (order_name, once_dose, dose_unit)           |
| infusion/fluid parameters, targets      | order_inpatient.order_advice                                 |
| ASA class, procedure                    | anethesia_record                                             |
| imaging/monitoring/exam/questionnaires  | examination_report.exam_findings (one report per calculator) |

**Convention for time series (shared by the oracle's SQL and the evaluator's EA):** every lab and
vital has earlier decoy measurements; the ground-truth value is the **most recent** measurement
of that item for the patient. When one task gives the same item several different values (e.g.
sodium before and after treatment), they are consecutive measurements in calculator order, the
last one being the most recent; each placement's query then pins its own ``report_time``.

Free-text inputs are written as ``"<field>: <value>"`` lines, so the value appears verbatim.
Retrieval needs real SQL: other (distractor) patients, irrelevant labs, earlier measurements.
``MaterializeReport.placed[i].query`` is a SQL statement that returns the row holding input i
(what the scripted oracle runs); ``unplaced`` lists inputs that could not be placed, with reasons.

Deterministic for a given ``seed``: same task + seed -> identical rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from calcmate.calculators.spec import normalize_name
from calcmate.ehr import lexicon as lx
from calcmate.ehr.server import EhrDatabase
from calcmate.tasks import Task
from calcmate.units import UnitError, convert, parse_quantity

CAMPUS = "Main Campus"
INSTITUTION = "CM001"
FIRST = {"Male": ["James", "Robert", "Michael", "David", "Wei", "Carlos", "Ahmed", "Thomas", "Daniel", "Kenji"],
         "Female": ["Mary", "Linda", "Susan", "Maria", "Mei", "Fatima", "Anna", "Emily", "Grace", "Sofia"]}
LAST = ["Smith", "Johnson", "Garcia", "Chen", "Nguyen", "Patel", "Kim", "Brown", "Rossi", "Müller", "Okafor", "Silva"]
DEPTS = ["Internal Medicine", "Cardiology", "Nephrology", "Neurology", "Critical Care", "Pulmonology", "General Surgery"]


@dataclass
class Placement:
    """Where one input went. ``stored`` is the text its row holds for it (checked by tests);
    ``match`` says how ``stored`` relates to ``value``: verbatim (contains it), number (same
    number), converted (same quantity in the column's unit), derived (e.g. age 67 for "65-74")."""

    calculator: str
    field: str
    value: Any
    table: str
    column: str
    stored: str
    match: str
    query: str
    kind: str  # lab | vital | demographic | history | medication | order | anesthesia | exam


@dataclass
class Unplaced:
    calculator: str
    field: str
    value: Any
    reason: str


@dataclass
class MaterializeReport:
    task_id: str
    patient_id: str
    visit_id: str
    seed: int
    placed: list[Placement] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    distractor_patients: list[str] = field(default_factory=list)

    @property
    def queries(self) -> list[tuple[str, str, str]]:
        """(calculator, field, SQL) for every placed input: what a scripted agent runs."""
        return [(p.calculator, p.field, p.query) for p in self.placed]

    def for_calculator(self, name: str) -> list[Placement]:
        return [p for p in self.placed if p.calculator == name]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LLMConfig:
    """Optional OpenAI-compatible model that rewrites rule-based text sections as prose.
    A rewrite is kept only if every value still appears verbatim; otherwise the rules' text stays."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.7


# ---------------------------------------------------------------------------------------------
def _lit(v: Any) -> str:
    """A SQL literal for generated queries (single quotes doubled)."""
    return "'" + str(v).replace("'", "''") + "'"


def _vstr(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else str(v)


def _numeric(value: Any) -> tuple[float, str | None, int] | None:
    """A leading number with a plausible unit -> (number, unit, decimals); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        s = str(value)
        return float(value), None, len(s.split(".")[1]) if "." in s else 0
    if not isinstance(value, str):
        return None
    try:
        num, unit = parse_quantity(value)
    except ValueError:
        return None
    m = re.match(r"\s*[-+]?[\d.,]+", value)
    lead = m.group(0).strip() if m else ""
    if re.match(r"\s*[-+]?\d+(\.\d+)?\s*(-|–|to)\s*\d", value):  # a range such as "65-74"
        return None
    dec = len(lead.split(".")[1]) if "." in lead else 0
    if unit:
        unit = re.split(r"\s*[(;,]", unit, maxsplit=1)[0].strip()
        if not unit:
            unit = None
        elif len(unit) > 20 or len(unit.split()) > 2 or re.search(r"[a-z]{4,} [a-z]{4,}", unit.lower()):
            return None
    return num, unit, dec


def _fmt(x: float, dec: int) -> str:
    return f"{x:.{dec}f}" if dec > 0 else str(int(round(x)))


class _Builder:
    def __init__(self, task: Task, seed: int):
        self.task, self.seed = task, seed
        h = hashlib.sha256(f"{seed}:{task.task_id}".encode()).hexdigest()
        self.rng = random.Random(h)
        self.pid = task.patient_id or f"P{h[:10]}"
        self.vid = f"V{h[10:20]}"
        self.rows: dict[str, list[dict]] = defaultdict(list)
        self.leftover: list[tuple] = []  # inputs a structured slot could not take -> text
        self.report = MaterializeReport(task.task_id, self.pid, self.vid, seed)
        self._n = 0
        # the encounter is at/after every date the task mentions
        dates = [dt.date.fromisoformat(m) for a in task.calculator_answers for i in a.inputs
                 for m in re.findall(r"\b(\d{4}-\d{2}-\d{2})\b", _vstr(i.value)) if _valid_date(m)]
        base = max(dates) if dates else dt.date(2024, 1, 1) + dt.timedelta(days=self.rng.randrange(700))
        self.now = dt.datetime.combine(base, dt.time(8 + self.rng.randrange(4), self.rng.randrange(60)))
        self.admit = self.now - dt.timedelta(days=2, hours=self.rng.randrange(12))

    def uid(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{hashlib.sha1(f'{self.seed}:{self.pid}:{self._n}'.encode()).hexdigest()[:12]}"

    def place(self, calc, inp, table, column, stored, match, query, kind) -> None:
        self.report.placed.append(Placement(calc, inp.field, inp.value, table, column, stored, match, query, kind))


def _valid_date(s: str) -> bool:
    try:
        dt.date.fromisoformat(s)
        return True
    except ValueError:
        return False


def _classify(field_n: str, value: Any) -> tuple[str, Any]:
    """-> (kind, detail). Kinds: lab, uln, vital, age, sex, ethnicity, dob, anesthesia, dose,
    history, order, exam:<type>."""
    num = _numeric(value)
    if lx.DEMO_DOB.search(field_n):
        return "dob", None
    if lx.DEMO_SEX.search(field_n):
        return "sex", None
    if lx.DEMO_ETHNICITY.search(field_n):
        return "ethnicity", None
    if lx.DEMO_AGE.search(field_n) and not re.search(r"\b(gestation|gestational|postmenstrual|corrected)\b", field_n):
        return "age", None
    for col, pat in lx.ANESTHESIA:
        if pat.search(field_n):
            return "anesthesia", col
    if num is not None:
        if lx.UPPER_LIMIT.search(field_n):
            for item in lx.LABS:
                if re.search(item.pattern, field_n):
                    return "uln", item
        if not lx.NOT_A_MEASUREMENT.search(field_n):
            for v in lx.VITALS:
                if re.search(v.pattern, field_n):
                    return "vital", v
            if not lx.INTAKE_OUTPUT.search(field_n) or re.search(r"\burine (sodium|potassium|chloride|osm|creatinine)", field_n):
                for item in lx.LABS:
                    if re.search(item.pattern, field_n):
                        return "lab", item
        if lx.MEDICATION.search(field_n) and num[1] and re.match(r"^(mg|g|mcg|ug|µg|units?|iu|mEq)$", num[1], re.I):
            return "dose", None
    if lx.MEDICATION.search(field_n) and not lx.ORDER_PARAM.search(field_n):
        return "history", "medication"
    if lx.ORDER_PARAM.search(field_n) or lx.INTAKE_OUTPUT.search(field_n):
        return "order", None
    if lx.IMAGING.search(field_n):
        return "exam", "Imaging and functional studies"
    if lx.MONITORING.search(field_n):
        return "exam", "Bedside monitoring"
    if lx.HISTORY.search(field_n):
        return "history", None
    return "exam", "Clinical assessment"


# ---------------------------------------------------------------------------------------------
def materialize(task: Task, conn_or_db: psycopg.Connection | EhrDatabase, seed: int = 0, *,
                n_distractors: int = 2, llm: LLMConfig | None = None) -> MaterializeReport:
    """Write ``task``'s patient (and distractor patients) into the EHR; return where each input went.

    Re-running with the same task and seed replaces that patient's rows with identical ones.
    """
    b = _Builder(task, seed)
    inputs = [(a.name, i) for a in sorted(task.calculator_answers, key=lambda a: a.order) for i in a.inputs]
    groups: dict[str, list] = defaultdict(list)
    for calc, inp in inputs:
        if inp.value is None or (isinstance(inp.value, str) and not inp.value.strip()):
            b.report.unplaced.append(Unplaced(calc, inp.field, inp.value, "empty value"))
            continue
        kind, detail = _classify(normalize_name(inp.field), inp.value)
        groups[kind].append((calc, inp, detail))

    sex = _demographics(b, groups)
    _labs(b, groups.get("lab", []), groups.get("uln", []))
    _vitals(b, groups.get("vital", []))
    _anesthesia(b, groups.get("anesthesia", []))
    _doses(b, groups.get("dose", []))
    texts = _text_sections(b, groups, sex)
    if llm is not None:
        _llm_rewrite(b, texts, llm)
    _irrelevant_labs(b)
    for k in range(n_distractors):
        _distractor(b, k)
    _write(b, conn_or_db)
    b.report.rows = {t: len(r) for t, r in b.rows.items()}
    return b.report


# -- demographics -------------------------------------------------------------------------------
_AGE_CATS = {"adult": (18, 85), "elderly": (65, 90), "child": (2, 12), "pediatric": (2, 15), "adolescent": (12, 17),
             "infant": (0, 1), "neonate": (0, 0), "newborn": (0, 0)}


def _age_constraint(value: Any) -> tuple[str, Any]:
    s = _vstr(value).strip().lower()
    m = re.match(r"^[<>≥≤]=?\s*(\d+)", s)
    if m:
        n = int(m.group(1))
        return "range", (n, n + 15) if s[0] in ">≥" else (max(18, n - 15), n - 1)
    m = re.match(r"^(\d+)\s*(?:-|–|to)\s*(\d+)", s)
    if m:
        return "range", (int(m.group(1)), int(m.group(2)))
    num = _numeric(value)
    if num is not None and (num[1] is None or re.match(r"^(y|yr|yrs|years?|years old)$", num[1].lower())):
        return "exact", int(num[0])
    for k, r in _AGE_CATS.items():
        if k in s:
            return "range", r
    return "criterion", None


def _demographics(b: _Builder, groups) -> str:
    age_items, exact, ranges = groups.get("age", []), [], []
    for _, inp, _ in age_items:
        kind, v = _age_constraint(inp.value)
        if kind == "exact":
            exact.append(v)
        elif kind == "range":
            ranges.append(v)
    dob = None
    for _, inp, _ in groups.get("dob", []):
        m = re.search(r"\d{4}-\d{2}-\d{2}", _vstr(inp.value))
        if m and _valid_date(m.group(0)):
            dob = dt.date.fromisoformat(m.group(0))
            break
    if exact:
        age = exact[0]
    elif ranges:
        lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
        age = b.rng.randint(lo, hi) if lo <= hi else b.rng.randint(*ranges[0])
    else:
        age = b.rng.randint(45, 80)
    if dob is None:
        dob = b.now.date() - dt.timedelta(days=int(age * 365.25) + b.rng.randrange(1, 300))
    days = (b.now.date() - dob).days
    age_val, age_unit = (days // 365, "years") if days >= 365 * 2 else ((days // 30, "months") if days >= 60 else (days, "days"))
    if exact and age_unit == "years":
        age_val = exact[0]

    sex = None
    for _, inp, _ in groups.get("sex", []):
        s, f = _vstr(inp.value).strip().lower(), normalize_name(inp.field)
        yes = s.startswith(("yes", "true", "1"))
        no = s.startswith(("no", "false", "0"))
        if s.startswith(("female", "f ")) or s in ("f", "woman"):
            sex = sex or "Female"
        elif s.startswith(("male", "m ")) or s in ("m", "man"):
            sex = sex or "Male"
        elif f.endswith("female") and (yes or no):
            sex = sex or ("Female" if yes else "Male")
        elif f.endswith("male") and (yes or no):
            sex = sex or ("Male" if yes else "Female")
    sex = sex or b.rng.choice(["Male", "Female"])
    ethnicity = next((_vstr(i.value) for _, i, _ in groups.get("ethnicity", [])), b.rng.choice(["Han", "White", "Black", "Hispanic", "Asian"]))
    name = f"{b.rng.choice(FIRST[sex])} {b.rng.choice(LAST)}"
    b.name, b.sex, b.dept = name, sex, b.rng.choice(DEPTS)
    b.rows["patient_information"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=b.pid, campus_name=CAMPUS, patient_name=name, gender=sex,
        birth_date=dob, visit_card_no=b.uid("C"), marriage_status=b.rng.choice(["Married", "Single", "Widowed"]),
        ethnicity=ethnicity, nationality="", abo_blood_type=b.rng.choice("ABO") if b.rng.random() < 0.8 else "AB",
        rh_blood_type="+", source_system="HIS", is_valid=True))
    b.rows["visit_inpatient"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, visit_type="Inpatient",
        campus_name=CAMPUS, inpatient_no=b.uid("IP"), visits_num=b.rng.randint(1, 4), patient_name=name, gender=sex,
        patient_age=age_val, patient_age_unit=age_unit, admission_time=b.admit, admission_way=b.rng.choice(["Emergency", "Outpatient"]),
        admission_dept_name=b.dept, admission_ward_name=f"{b.dept} Ward {b.rng.randint(1, 6)}", major_diagnosis=None,
        bed_no=str(b.rng.randint(1, 40)), current_dept_name=b.dept, create_time=b.admit, update_time=b.now, is_valid=True))

    q_age = f"SELECT patient_age, patient_age_unit FROM visit_inpatient WHERE patient_id = {_lit(b.pid)}"
    for calc, inp, _ in age_items:
        kind, v = _age_constraint(inp.value)
        match = "number" if kind == "exact" and v == age_val else "derived"
        b.place(calc, inp, "visit_inpatient", "patient_age", str(age_val), match, q_age, "demographic")
    for calc, inp, _ in groups.get("dob", []):
        if re.search(r"\d{4}-\d{2}-\d{2}", _vstr(inp.value)):
            b.place(calc, inp, "patient_information", "birth_date", dob.isoformat(), "verbatim",
                    f"SELECT birth_date FROM patient_information WHERE patient_id = {_lit(b.pid)}", "demographic")
        else:
            b.report.unplaced.append(Unplaced(calc, inp.field, inp.value, "date of birth is not a YYYY-MM-DD date"))
    for calc, inp, _ in groups.get("sex", []):
        match = "verbatim" if sex.lower() in _vstr(inp.value).lower() else "derived"
        b.place(calc, inp, "patient_information", "gender", sex, match,
                f"SELECT gender FROM patient_information WHERE patient_id = {_lit(b.pid)}", "demographic")
    for calc, inp, _ in groups.get("ethnicity", []):
        match = "verbatim" if _vstr(inp.value) == ethnicity else "derived"
        if match == "derived":  # a second, different ethnicity: keep it findable as text
            groups.setdefault("history", []).append((calc, inp, None))
            continue
        b.place(calc, inp, "patient_information", "ethnicity", ethnicity, match,
                f"SELECT ethnicity FROM patient_information WHERE patient_id = {_lit(b.pid)}", "demographic")
    return sex


# -- labs ---------------------------------------------------------------------------------------
def _lab_key(field_n: str, item: lx.LabItem) -> tuple[str, str, str]:
    for key, sample, pat in lx.SAMPLES:
        if re.search(pat, field_n):
            return f"{key}:{item.key}", sample, f"{sample} {item.name[0].lower()}{item.name[1:]}" if item.name[:2] != item.name[:2].upper() else f"{sample} {item.name}"
    return item.key, "Blood" if item.panel != "Blood gas" else "Arterial blood", item.name


def _jitter(b: _Builder, x: float, dec: int, avoid: set[str]) -> str:
    for _ in range(20):
        f = 1 + b.rng.choice([-1, 1]) * b.rng.uniform(0.06, 0.2)
        y = x * f if x else b.rng.uniform(0.1, 2)
        s = _fmt(y, dec)
        if s not in avoid and float(s) >= 0:
            return s
    return _fmt(x + 10 ** -dec * 3 + 1, dec)


def _labs(b: _Builder, labs, ulns) -> None:
    series: dict[str, dict] = {}
    for calc, inp, item in labs:
        num, unit, dec = _numeric(inp.value)
        key, sample, name = _lab_key(normalize_name(inp.field), item)
        s = series.setdefault(key, {"item": item, "sample": sample, "name": name, "values": [], "inputs": []})
        unit = unit or item.unit
        val = _fmt(num, dec)
        if (val, unit) not in s["values"]:
            s["values"].append((val, unit))
        s["inputs"].append((calc, inp, s["values"].index((val, unit))))
    uln_for: dict[str, list] = defaultdict(list)
    for calc, inp, item in ulns:
        key, sample, name = _lab_key(normalize_name(inp.field), item)
        if key not in series:  # an upper limit with no measurement: add a plausible measurement
            series[key] = {"item": item, "sample": sample, "name": name, "inputs": [],
                           "values": [(_fmt(_normal(b, item), item.decimals), _numeric(inp.value)[1] or item.unit)]}
        uln_for[key].append((calc, inp))
    for key, s in series.items():
        item, n = s["item"], len(s["values"])
        uln = None
        if uln_for.get(key):
            uln = _numeric(uln_for[key][0][1].value)[0]
        times = [b.now - dt.timedelta(hours=6 * (n - 1 - k)) for k in range(n)]
        avoid = {v for v, _ in s["values"]}
        decoys = [b.now - dt.timedelta(days=d, hours=b.rng.randrange(6)) for d in (3, 2, 1)][: b.rng.randint(1, 3)]
        unit0, v0 = s["values"][0][1], float(s["values"][0][0])
        dec = max(len(v.split(".")[1]) if "." in v else 0 for v, _ in s["values"])
        rows = [(t, _jitter(b, v0, dec, avoid), unit0) for t in sorted(decoys)]
        rows += [(t, v, u) for t, (v, u) in zip(times, s["values"])]
        ids = []
        for t, v, u in rows:
            rid = b.uid("LI")
            ids.append(rid)
            lo, hi = (item.low, item.high) if (u or "") == item.unit else (None, None)
            if uln is not None:
                hi = uln
            flag = "H" if hi is not None and float(v) > hi else "L" if lo is not None and float(v) < lo else "N"
            b.rows["laboratory_result"].append(dict(
                medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=f"LR{t:%Y%m%d%H%M}{b.pid[-4:]}",
                report_item_id=rid, campus_name=CAMPUS, visit_type="Inpatient", test_report_name=item.panel,
                test_item_name=s["name"], test_result=v, unit=u, sample_name=s["sample"], normal_low=lo, normal_high=hi,
                reference_range=(f"{lo:g}-{hi:g}" if lo is not None and hi is not None else f"<{hi:g}" if hi is not None else None),
                abnormal_flag=flag, report_time=t, create_time=t, update_time=t, is_valid=True))
        base = (f"SELECT test_item_name, test_result, unit, reference_range, report_time FROM laboratory_result "
                f"WHERE patient_id = {_lit(b.pid)} AND test_item_name = {_lit(s['name'])}")
        for calc, inp, k in s["inputs"]:
            q = base + (" ORDER BY report_time DESC LIMIT 1" if n == 1 else f" AND report_time = {_lit(times[k].isoformat(sep=' '))}")
            num, unit, _ = _numeric(inp.value)
            b.place(calc, inp, "laboratory_result", "test_result", s["values"][k][0], "number", q, "lab")
        for calc, inp in uln_for.get(key, []):
            b.place(calc, inp, "laboratory_result", "normal_high", f"{uln:g}", "number",
                    f"SELECT test_item_name, normal_high, reference_range FROM laboratory_result WHERE patient_id = {_lit(b.pid)} "
                    f"AND test_item_name = {_lit(s['name'])} ORDER BY report_time DESC LIMIT 1", "lab")


def _normal(b: _Builder, item: lx.LabItem) -> float:
    lo = item.low if item.low is not None else 0.0
    hi = item.high if item.high is not None else lo * 1.3 + 1
    return b.rng.uniform(lo + 0.15 * (hi - lo), hi - 0.15 * (hi - lo))


def _irrelevant_labs(b: _Builder) -> None:
    used = {r["test_item_name"] for r in b.rows["laboratory_result"]}
    pool = [i for i in lx.LABS if i.name not in used and i.panel in ("Complete blood count", "Basic metabolic panel", "Liver function", "Coagulation")]
    for item in b.rng.sample(pool, min(4, len(pool))):
        for d in (1, 0):
            t = b.now - dt.timedelta(days=d, hours=b.rng.randrange(1, 5))
            b.rows["laboratory_result"].append(dict(
                medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=f"LR{t:%Y%m%d%H%M}{b.pid[-4:]}",
                report_item_id=b.uid("LI"), campus_name=CAMPUS, visit_type="Inpatient", test_report_name=item.panel,
                test_item_name=item.name, test_result=_fmt(_normal(b, item), item.decimals), unit=item.unit, sample_name="Blood",
                normal_low=item.low, normal_high=item.high, abnormal_flag="N", report_time=t, create_time=t, update_time=t, is_valid=True))


# -- vitals -------------------------------------------------------------------------------------
def _vitals(b: _Builder, vitals) -> None:
    truth: dict[str, list[str]] = defaultdict(list)
    who: list[tuple] = []
    for calc, inp, v in vitals:
        num, unit, dec = _numeric(inp.value)
        val, match = _fmt(num, dec), "number"
        if unit and v.unit != "/min" and normalize_name(unit) != normalize_name(v.unit):
            try:
                val, match = _fmt(convert(num, unit, v.unit), max(dec, v.decimals, 1)), "converted"
            except UnitError:
                pass
        if val not in truth[v.column]:
            truth[v.column].append(val)
        who.append((calc, inp, v.column, val, match))
    extra = max((len(x) for x in truth.values()), default=1) - 1
    cols = [v.column for v in lx.VITALS]
    base = {v.column: b.rng.uniform(v.low, v.high) for v in lx.VITALS}
    times_truth = {}
    rows = []
    for d in (3, 2, 1):
        t = b.now - dt.timedelta(days=d, hours=b.rng.randrange(4))
        row = {}
        for v in lx.VITALS:
            if v.column in ("height",) and "height" in truth:
                row["height"] = truth["height"][0]
            elif v.column in truth:
                row[v.column] = _jitter(b, float(truth[v.column][0]), v.decimals, set(truth[v.column]))
            elif v.column not in ("pulse",):
                row[v.column] = _fmt(base[v.column] * b.rng.uniform(0.95, 1.05), v.decimals)
        rows.append((t, row))
    for k in range(extra + 1):  # the last row is the most recent: every column's last truth value
        t = b.now - dt.timedelta(hours=4 * (extra - k))
        row = {}
        for c in cols:
            vals = truth.get(c)
            if vals:
                idx = len(vals) - 1 - (extra - k)
                if idx >= 0:
                    row[c] = vals[idx]
                    times_truth[(c, vals[idx])] = t
            elif k == extra and c != "pulse":
                row[c] = _fmt(base[c], next(v.decimals for v in lx.VITALS if v.column == c))
        rows.append((t, row))
    for t, row in rows:
        b.rows["vital_signs"].append(dict(
            medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, vs_id=b.uid("VS"), campus_name=CAMPUS,
            patient_name=b.name, dept_name=b.dept, bed_no=None, plan_time=t, measure_time=t,
            days_in_hospital=max(0, (t - b.admit).days), create_time=t, update_time=t, is_valid=True, **row))
    for calc, inp, col, val, match in who:
        q = f"SELECT {col}, measure_time FROM vital_signs WHERE patient_id = {_lit(b.pid)} AND {col} IS NOT NULL"
        q += (" ORDER BY measure_time DESC LIMIT 1" if len(truth[col]) == 1
              else f" AND measure_time = {_lit(times_truth[(col, val)].isoformat(sep=' '))}")
        b.place(calc, inp, "vital_signs", col, val, match, q, "vital")


# -- anesthesia, doses --------------------------------------------------------------------------
def _anesthesia(b: _Builder, items) -> None:
    if not items:
        return
    rid = b.uid("AN")
    row = dict(medical_institution_code=INSTITUTION, campus_name=CAMPUS, patient_id=b.pid, visit_id=b.vid, report_id=rid,
               visit_type="Inpatient", anesthesia_start_time=b.now + dt.timedelta(days=1),
               anesthesia_end_time=b.now + dt.timedelta(days=1, hours=3), create_time=b.now, update_time=b.now, is_valid=True)
    b.rows["anethesia_record"].append(row)
    for calc, inp, col in items:
        val = _vstr(inp.value)
        if row.get(col) not in (None, val):  # a second spelling: keep it findable in the notes
            b.leftover.append((calc, inp, ("exam", "Pre-anesthesia assessment")))
            continue
        row[col] = val
        b.place(calc, inp, "anethesia_record", col, val, "verbatim",
                f"SELECT {col} FROM anethesia_record WHERE patient_id = {_lit(b.pid)}", "anesthesia")


def _doses(b: _Builder, items) -> None:
    for calc, inp, _ in items:
        num, unit, dec = _numeric(inp.value)
        drug = re.sub(r"\s*\(.*?\)\s*", " ", inp.field).replace("?", "").strip() or inp.field
        if num == 0:
            b.leftover.append((calc, inp, ("history", "medication")))
            continue
        rid = b.uid("OR")
        t = b.admit + dt.timedelta(hours=2)
        b.rows["order_inpatient"].append(dict(
            medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=rid, campus_name=CAMPUS,
            patient_name=b.name, order_class="Long-term", order_type="Medication", drug_flag="1", order_name=drug,
            once_dose=num, dose_unit=unit, frequency="qd", usage="PO", order_advice=f"{inp.field}: {_vstr(inp.value)}",
            order_begin_time=t, submit_time=t, dept_name=b.dept, order_state_name="Active", create_time=t, update_time=t,
            is_valid=True))
        b.place(calc, inp, "order_inpatient", "once_dose", f"{num:g}", "number",
                f"SELECT order_name, once_dose, dose_unit, frequency, order_begin_time FROM order_inpatient "
                f"WHERE patient_id = {_lit(b.pid)} AND report_id = {_lit(rid)}", "medication")


# -- free text ----------------------------------------------------------------------------------
@dataclass
class _Text:
    table: str
    column: str
    key_col: str
    key: str
    lines: list[str]
    members: list[tuple]  # (calc, inp, line)


def _text_sections(b: _Builder, groups, sex: str) -> list[_Text]:
    """History -> admission_record sections; orders -> order_inpatient.order_advice; everything
    else -> one examination_report per (calculator, exam type)."""
    adm_id = b.uid("AR")
    adm = dict(medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=adm_id,
               inpatient_no=b.uid("IP"), campus_name=CAMPUS, patient_name=b.name, gender=sex, admission_time=b.admit,
               admission_dept_name=b.dept, record_title="Admission record", chief_complaints="",
               present_illness=f"{sex} patient admitted to {b.dept}.", record_time=b.admit + dt.timedelta(hours=3),
               record_state_name="Signed", creator_name=f"Dr. {b.rng.choice(LAST)}", create_time=b.admit, update_time=b.admit,
               is_valid=True)
    b.rows["admission_record"].append(adm)
    sections: dict[tuple, _Text] = {}
    items = [(c, i, ("history", d)) for c, i, d in groups.get("history", [])]
    items += [(c, i, ("order", d)) for c, i, d in groups.get("order", [])]
    items += [(c, i, ("exam", d)) for c, i, d in groups.get("exam", [])]
    items += b.leftover
    diag_seq = 0
    for calc, inp, (kind, detail) in items:
        line = f"{inp.field}: {_vstr(inp.value)}"
        fn = normalize_name(inp.field)
        if kind == "history":
            col = "family_history" if lx.FAMILY.search(fn) else "personal_history" if lx.PERSONAL.search(fn) else "past_medical_history"
            key = ("admission_record", col)
            if key not in sections:
                sections[key] = _Text("admission_record", col, "report_id", adm_id, [], [])
            if _vstr(inp.value).strip().lower().startswith("yes") and col == "past_medical_history" and detail != "medication":
                diag_seq += 1
                name = re.sub(r"\b(history of|history|prior|previous|known)\b|\?|\(.*?\)", "", inp.field, flags=re.I).strip(" :,-")
                b.rows["diagnostic_record"].append(dict(
                    medical_institution_code=INSTITUTION, campus_name=CAMPUS, patient_id=b.pid, visit_id=b.vid,
                    report_id=adm_id, report_item_id=b.uid("DX"), diagnosis_class_name="Secondary diagnosis",
                    diagnosis_seq=str(diag_seq), diagnosis_name=name or inp.field, main_flag="0",
                    diagnosis_source="Admission record", diagnosis_time=b.admit + dt.timedelta(hours=3), is_valid=True))
        elif kind == "order":
            key = ("order_inpatient", calc)
            if key not in sections:
                rid = b.uid("OR")
                t = b.admit + dt.timedelta(hours=4)
                b.rows["order_inpatient"].append(dict(
                    medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=rid, campus_name=CAMPUS,
                    patient_name=b.name, order_class="Temporary", order_type="Treatment", drug_flag="0",
                    order_name="Fluid and infusion management" if lx.ORDER_PARAM.search(fn) else "Intake/output monitoring",
                    order_begin_time=t, submit_time=t, dept_name=b.dept, order_state_name="Active", create_time=t,
                    update_time=t, is_valid=True))
                sections[key] = _Text("order_inpatient", "order_advice", "report_id", rid, [], [])
        else:
            key = ("examination_report", calc, detail)
            if key not in sections:
                rid = b.uid("ER")
                t = b.now - dt.timedelta(hours=b.rng.randrange(1, 30))
                b.rows["examination_report"].append(dict(
                    medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=rid, campus_name=CAMPUS,
                    visit_type="Inpatient", patient_name=b.name, gender=sex, exam_type=detail, report_name=detail,
                    exam_time=t, report_time=t, report_state="1", create_time=t, update_time=t, is_valid=True))
                sections[key] = _Text("examination_report", "exam_findings", "report_id", rid, [], [])
        sec = sections[key]
        if line not in sec.lines:
            sec.lines.append(line)
        sec.members.append((calc, inp, line))
    texts = list(sections.values())
    for sec in texts:
        _set_text(b, sec, "\n".join(sec.lines))
        cols = "report_name, exam_time, " if sec.table == "examination_report" else ""
        q = (f"SELECT {cols}{sec.column} FROM {sec.table} WHERE patient_id = {_lit(b.pid)} "
             f"AND {sec.key_col} = {_lit(sec.key)}")
        for calc, inp, line in sec.members:
            kind = "history" if sec.table == "admission_record" else "order" if sec.table == "order_inpatient" else "exam"
            b.place(calc, inp, sec.table, sec.column, line, "verbatim", q, kind)
    return texts


def _set_text(b: _Builder, sec: _Text, text: str) -> None:
    for row in b.rows[sec.table]:
        if row.get(sec.key_col) == sec.key and row.get("patient_id") == b.pid:
            row[sec.column] = text
            if sec.table == "examination_report":
                row["intact_exam_report"] = text
            return


def _llm_rewrite(b: _Builder, texts: list[_Text], cfg: LLMConfig) -> None:
    """Ask an OpenAI-compatible model to write each section as clinical prose; keep the prose only
    if every input value still appears verbatim (then ``stored`` becomes the value itself)."""
    import os

    from openai import OpenAI

    client = OpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env, "none"))
    for sec in texts:
        prompt = ("Rewrite these findings as a concise, realistic clinical note section. Keep every value after "
                  "the colon EXACTLY as written (same characters). Do not add calculator names.\n\n" + "\n".join(sec.lines))
        try:
            r = client.chat.completions.create(model=cfg.model, temperature=cfg.temperature,
                                               seed=b.seed, messages=[{"role": "user", "content": prompt}])
            prose = (r.choices[0].message.content or "").strip()
        except Exception:
            continue
        values = [_vstr(inp.value) for _, inp, _ in sec.members]
        if prose and all(v in prose for v in values):
            _set_text(b, sec, prose)
            for p in b.report.placed:
                if p.table == sec.table and p.stored in sec.lines and sec.key in p.query:
                    p.stored = _vstr(p.value)


# -- distractors --------------------------------------------------------------------------------
def _distractor(b: _Builder, k: int) -> None:
    """Another patient on the same ward with the same kinds of data, different values."""
    r = random.Random(f"{b.seed}:{b.task.task_id}:d{k}")
    pid = f"P{hashlib.sha1(f'{b.pid}:{k}:{b.seed}'.encode()).hexdigest()[:10]}"
    vid = f"V{hashlib.sha1(f'{pid}:v'.encode()).hexdigest()[:10]}"
    sex = r.choice(["Male", "Female"])
    name = f"{r.choice(FIRST[sex])} {r.choice(LAST)}"
    age = r.randint(25, 90)
    b.report.distractor_patients.append(pid)
    b.rows["patient_information"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=pid, campus_name=CAMPUS, patient_name=name, gender=sex,
        birth_date=b.now.date() - dt.timedelta(days=int(age * 365.25) + r.randrange(300)), ethnicity=r.choice(["Han", "White", "Black"]),
        source_system="HIS", is_valid=True))
    b.rows["visit_inpatient"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=pid, visit_id=vid, visit_type="Inpatient", campus_name=CAMPUS,
        patient_name=name, gender=sex, patient_age=age, patient_age_unit="years", admission_time=b.admit - dt.timedelta(days=r.randrange(5)),
        admission_dept_name=b.dept, current_dept_name=b.dept, is_valid=True))
    for row in [x for x in b.rows["laboratory_result"] if x["patient_id"] == b.pid][:40]:
        v = row["test_result"]
        try:
            dec = len(v.split(".")[1]) if "." in v else 0
            nv = _fmt(float(v) * r.uniform(0.7, 1.3), dec)
        except (TypeError, ValueError):
            nv = v
        t = row["report_time"] - dt.timedelta(hours=r.randrange(1, 20))
        b.rows["laboratory_result"].append({**row, "patient_id": pid, "visit_id": vid, "report_item_id": b.uid("LI"),
                                            "report_id": f"LR{t:%Y%m%d%H%M}{pid[-4:]}", "test_result": nv, "report_time": t,
                                            "create_time": t, "update_time": t})
    for row in [x for x in b.rows["vital_signs"] if x["patient_id"] == b.pid]:
        new = {**row, "patient_id": pid, "visit_id": vid, "vs_id": b.uid("VS"), "patient_name": name}
        for v in lx.VITALS:
            if new.get(v.column):
                try:
                    new[v.column] = _fmt(float(new[v.column]) * r.uniform(0.85, 1.15), v.decimals)
                except ValueError:
                    pass
        b.rows["vital_signs"].append(new)
    b.rows["admission_record"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=pid, visit_id=vid, report_id=b.uid("AR"), inpatient_no=b.uid("IP"),
        campus_name=CAMPUS, patient_name=name, gender=sex, record_title="Admission record",
        past_medical_history=r.choice(["Hypertension: Yes", "Diabetes: No", "No significant past history"]),
        admission_time=b.admit, is_valid=True))


# -- writing ------------------------------------------------------------------------------------
def _write(b: _Builder, conn_or_db) -> None:
    own = isinstance(conn_or_db, EhrDatabase)
    conn = conn_or_db.connect(autocommit=False) if own else conn_or_db
    pids = [b.pid, *b.report.distractor_patients]
    try:
        with conn.transaction():
            for table in ("laboratory_result", "vital_signs", "examination_report", "diagnostic_record", "anethesia_record",
                          "admission_record", "order_inpatient", "visit_inpatient", "patient_information"):
                conn.execute(sql.SQL("DELETE FROM {} WHERE patient_id = ANY(%s)").format(sql.Identifier(table)), (pids,))
            for table, rows in b.rows.items():
                cols = sorted({c for r in rows for c in r})
                stmt = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                    sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols)),
                    sql.SQL(", ").join(sql.Placeholder() * len(cols)))
                with conn.cursor() as cur:
                    cur.executemany(stmt, [tuple(r.get(c) for c in cols) for r in rows])
    finally:
        if own:
            conn.close()
