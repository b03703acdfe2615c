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
last one being the most recent; the query returns them all, newest first.

Free-text inputs are written as ``"<field>: <value>"`` lines, so the value appears verbatim.
Retrieval needs real SQL: other (distractor) patients, irrelevant labs, earlier measurements.
``unplaced`` lists inputs that could not be placed, with reasons.

**Retrieval convention** (``MaterializeReport.retrievals``; what the scripted oracle, hence the
synthesizer's teacher, runs): queries use only what an agent legitimately knows -- the patient_id
from the question, the schema from describe_tables, the clinical concept it is looking for -- and
never a row id (report_id, visit_id, report_item_id) or an exact timestamp. Calculators are
visited in task order; each runs one query per kind of source it still needs, and a result serves
every input whose rows it returns, so later calculators reuse it:

| source       | query                                                                              |
|--------------|------------------------------------------------------------------------------------|
| demographics | patient_information JOIN visit_inpatient for the patient (sex, birth date, age)    |
| labs         | ``test_item_name ILIKE '%sodium%' OR ...`` (the analyte's common name), all measurements ``ORDER BY test_item_name, report_time DESC`` |
| vitals       | the needed columns ``IS NOT NULL``, all measurements ``ORDER BY measure_time DESC`` |
| history      | the whole admission record's history sections                                      |
| exam reports | ``exam_findings ILIKE '%bradykinesia%' OR ...``: a word of each input's field, the one found in the fewest other reports (all reports when no word fits) |
| orders       | the patient's whole order list                                                     |
| anesthesia   | the anesthesia record's needed columns                                             |

``placed[i].query`` is the retrieval that shows input i, and ``placed[i].source`` names its rows.

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
from calcmate.synth import physiology as ph
from calcmate.tasks import Task
from calcmate.units import ANALYTES, UnitError, convert, is_known_unit, parse_quantity

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
    source: str = ""  # the rows it lives in: "lab:<test_item_name>", "vital:<column>", "exam:<report>", "history", ...


@dataclass
class Retrieval:
    """One query a careful agent would write, and the placed inputs its result shows.

    ``inputs`` index ``MaterializeReport.placed``; ``calculator`` is the first calculator (in task
    order) that needs it, i.e. when a scripted agent runs it; later calculators reuse its result."""

    sql: str
    inputs: list[int]
    calculator: str
    source: str  # demographic | vital | lab | history | exam | order | anesthesia
    tables: list[str] = field(default_factory=list)


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
    retrievals: list[Retrieval] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    distractor_patients: list[str] = field(default_factory=list)

    @property
    def queries(self) -> list[tuple[str, str, str]]:
        """(calculator, field, SQL) for every placed input: the retrieval whose result shows it."""
        return [(p.calculator, p.field, p.query) for p in self.placed]

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
        self.age_days = int(60 * 365.25)  # set from the task's age by _demographics
        self.lab_terms: dict[str, str] = {}  # test_item_name -> the ILIKE pattern an agent would search it by
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

    def place(self, calc, inp, table, column, stored, match, kind, source) -> None:
        """Record where an input went; its query is written later by ``_plan_retrievals``."""
        self.report.placed.append(Placement(calc, inp.field, inp.value, table, column, stored, match, "", kind, source))


def _valid_date(s: str) -> bool:
    try:
        dt.date.fromisoformat(s)
        return True
    except ValueError:
        return False


def _unit_fits(unit: str, item: lx.LabItem) -> bool:
    """Whether a value in ``unit`` can be this lab (a spelling calcmate.units does not know is given the benefit)."""
    if not item.unit:
        return not is_known_unit(unit) or unit.strip() in ("%",)
    analyte = item.key if item.key in ANALYTES else ("count" if "10^9" in item.unit else None)
    for u in (unit, re.sub(r"^\s*[×xX]\s*(?=10)", "", unit)):
        try:
            convert(1.0, u, item.unit, analyte)
            return True
        except (UnitError, ValueError, TypeError):
            continue
    return not is_known_unit(unit)


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
            if not lx.INTAKE_OUTPUT.search(field_n) or lx.SPECIMEN_LAB.search(field_n):
                for item in lx.LABS:
                    if re.search(item.pattern, field_n):
                        # a fluid given ("Ringer's lactate: 1500 mL", "25% albumin: 0 mL") is intake, not a lab
                        if num[1] and re.fullmatch(r"(m?l|cc)", num[1], re.I):
                            return "order", None
                        if num[1] and not _unit_fits(num[1], item):
                            continue  # "Time between creatinine measurements: 9.55 h" is no creatinine
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
    b = _build(task, seed, n_distractors, llm)
    _write(b, conn_or_db)
    return b.report


def materialize_rows(task: Task, seed: int = 0, *, n_distractors: int = 2) -> tuple[MaterializeReport, dict[str, list[dict]]]:
    """The rows ``materialize`` would write (table -> rows), without a database: for audits and tests."""
    b = _build(task, seed, n_distractors, None)
    return b.report, {t: list(r) for t, r in b.rows.items()}


def _build(task: Task, seed: int, n_distractors: int, llm: LLMConfig | None) -> _Builder:
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
    _plan_retrievals(b)
    for k in range(n_distractors):
        _distractor(b, k)
    b.report.rows = {t: len(r) for t, r in b.rows.items()}
    return b


# -- demographics -------------------------------------------------------------------------------
# age words -> exact ages in days [from, to): the first 28 days are the neonatal period
_AGE_CATS = {"neonat": (0, 28), "newborn": (0, 28), "preterm": (0, 28), "infant": (28, 365), "toddler": (365, 1096),
             "adolescent": (4383, 6575), "child": (730, 4383), "pediatric": (730, 5479), "paediatric": (730, 5479),
             "elderly": (23741, 32872), "geriatric": (23741, 32872), "adult": (6575, 31046)}


_AGE_DAYS = {"years": 365.25, "months": 30.44, "weeks": 7.0, "days": 1.0}


def _age_unit(field_n: str, unit: str | None) -> str | None:
    """The unit an exact age is given in (its value's unit, else the field's: "age (days)")."""
    for text in (unit or "", field_n):
        m = re.search(r"\b(y|yr|yrs|years?|months?|mos?|weeks?|wk|wks|w|days?|d)\b", text.lower())
        if m:
            w = m.group(1)
            return ("years" if w.startswith("y") else "months" if w.startswith("mo") else "weeks" if w.startswith("w")
                    else "days")
    return None


_AGE_UNIT = r"\s*(years?|yrs?|y|months?|mos?|weeks?|wks?|w|days?|d)?\b"


def _age_constraint(value: Any, field_n: str = "") -> tuple[str, Any]:
    """-> ("exact", (number, unit)) | ("range", (lo, hi) exact age in days, half-open) | ("criterion", None).

    Bands may be in any unit ("<1 month", "2–24 months", "65-74", "> 28 days"); a bare number is in the
    field's unit ("Age (months)"), else years."""
    s = _vstr(value).strip().lower().replace("–", "-").replace("—", "-")
    per = lambda u: _AGE_DAYS[_age_unit(field_n, u) or "years"]  # noqa: E731
    m = re.match(r"^(<=|>=|[<>≥≤]|under|below|younger than|over|above|older than)\s*(\d+(?:\.\d+)?)" + _AGE_UNIT, s)
    if m:
        op, n, d = m.group(1), float(m.group(2)), per(m.group(3))
        adult = d == _AGE_DAYS["years"] and n >= 30
        if op in ("<", "≤", "<=", "under", "below", "younger than"):
            hi = n * d + (d if op in ("≤", "<=") else 0)
            lo = max(18.0, n - 15) * d if adult else 0.0
            return "range", (int(lo), max(int(lo) + 1, int(hi)))
        lo = n * d + (0 if op in ("≥", ">=") else 1)
        hi = min(lo + 15 * d if adult else lo + max(n * d, d), 100 * 365.25)
        return "range", (int(lo), max(int(lo) + 1, int(hi)))
    m = re.match(r"^(\d+(?:\.\d+)?)" + _AGE_UNIT + r"\s*(?:-|to)\s*(\d+(?:\.\d+)?)" + _AGE_UNIT, s)
    if m:
        d = per(m.group(4) or m.group(2))
        lo, hi = float(m.group(1)) * d, (float(m.group(3)) + 1) * d  # completed units: "65-74" includes 74.9
        return "range", (int(lo), max(int(lo) + 1, int(hi)))
    num = _numeric(value)
    if num is not None and (num[1] is None or _age_unit("", num[1]) or re.match(r"^years old$", num[1].lower())):
        return "exact", (num[0], _age_unit(field_n, num[1]) or "years")
    for k, r in _AGE_CATS.items():
        if k in s:
            return "range", r
    return "criterion", None


def _demographics(b: _Builder, groups) -> str:
    age_items, exact, ranges = groups.get("age", []), [], []
    for _, inp, _ in age_items:
        kind, v = _age_constraint(inp.value, normalize_name(inp.field))
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
    ex_val, ex_unit = exact[0] if exact else (None, "years")
    if exact:
        age_days = (int(ex_val * 365.25) + b.rng.randrange(1, 300) if ex_unit == "years"
                    else round(ex_val * _AGE_DAYS[ex_unit]))
    elif ranges:
        lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
        if lo >= hi:  # bands that do not overlap: the first one
            lo, hi = ranges[0]
        age_days = b.rng.randrange(lo, hi)
    else:
        age_days = int(b.rng.randint(45, 80) * 365.25) + b.rng.randrange(1, 300)
    if dob is None:
        dob = b.now.date() - dt.timedelta(days=age_days)
    days = (b.now.date() - dob).days
    b.age_days = max(0, days)
    age_val, age_unit = (days // 365, "years") if days >= 365 * 2 else ((days // 30, "months") if days >= 60 else (days, "days"))
    if exact and age_unit == "years" and ex_unit == "years":
        age_val = int(ex_val)
    elif exact and ex_unit != "years" and abs(days / _AGE_DAYS[ex_unit] - ex_val) < 1:
        age_val, age_unit = int(ex_val), ex_unit  # an infant's age as the task gives it: "86 days"

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
    ethnicity = _ethnicity(b, [(i.field, _vstr(i.value)) for _, i, _ in groups.get("ethnicity", [])])
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

    for calc, inp, _ in age_items:
        kind, v = _age_constraint(inp.value, normalize_name(inp.field))
        if kind == "exact" and v[0] != int(v[0]):  # "16.1 months": the visit's integer age can't hold it -> the note
            b.leftover.append((calc, inp, ("exam", "Clinical assessment")))
            continue
        match = "number" if kind == "exact" and v[0] == age_val else "derived"
        b.place(calc, inp, "visit_inpatient", "patient_age", str(age_val), match, "demographic", "demographic")
    for calc, inp, _ in groups.get("dob", []):
        if re.search(r"\d{4}-\d{2}-\d{2}", _vstr(inp.value)):
            b.place(calc, inp, "patient_information", "birth_date", dob.isoformat(), "verbatim", "demographic", "demographic")
        else:
            b.report.unplaced.append(Unplaced(calc, inp.field, inp.value, "date of birth is not a YYYY-MM-DD date"))
    for calc, inp, _ in groups.get("sex", []):
        match = "verbatim" if sex.lower() in _vstr(inp.value).lower() else "derived"
        b.place(calc, inp, "patient_information", "gender", sex, match, "demographic", "demographic")
    for calc, inp, _ in groups.get("ethnicity", []):
        said = _race_said(inp.field, _vstr(inp.value))
        if said is None:  # a second, different ethnicity: keep it findable as text
            groups.setdefault("history", []).append((calc, inp, None))
            continue
        match = "verbatim" if _vstr(inp.value) == ethnicity else "derived"  # "Black race: Yes" -> the race itself
        b.place(calc, inp, "patient_information", "ethnicity", ethnicity, match, "demographic", "demographic")
    return sex


# US OMB race/ethnicity categories: what an EHR's ethnicity column holds (never "Yes"/"No").
ETHNICITIES = ("White", "Black or African American", "Asian", "Hispanic or Latino", "American Indian or Alaska Native")
_RACE_WORDS = (("Black or African American", r"\b(black|african)"), ("White", r"\b(white|caucasian)"),
               ("Asian", r"\basian"), ("Hispanic or Latino", r"\b(hispanic|latin)"),
               ("American Indian or Alaska Native", r"\b(american indian|alaska)"))


def _race_said(field: str, value: str) -> tuple[str, bool] | None:
    """What an ethnicity input states: (category, True) for "Black" or "Black race: Yes", (category, False)
    for "Black race: No"; None for a value naming no category and no yes/no ("Han")."""
    v = value.strip().lower()
    yes, no = v.startswith(("yes", "true")), v.startswith(("no", "false"))
    if not (yes or no):
        return value.strip(), True  # a real value ("Caucasian", "Black") is kept as charted
    for cat, pat in _RACE_WORDS:
        if re.search(pat, field.lower()):
            return cat, yes
    return None


def _ethnicity(b: _Builder, items: list[tuple[str, str]]) -> str:
    """The patient's one ethnicity value: what the inputs state (a category, or not a named one), else drawn."""
    said = [x for f, v in items if (x := _race_said(f, v)) is not None]
    given = next((c for c, pos in said if pos), None)
    if given is not None:
        return given
    excluded = {c for c, pos in said if not pos}
    return b.rng.choice([c for c in ETHNICITIES if c not in excluded])


# -- labs ---------------------------------------------------------------------------------------
def _lab_key(field_n: str, item: lx.LabItem) -> tuple[str, str, str]:
    for key, sample, pat in lx.SAMPLES:
        if re.search(pat, field_n):
            return f"{key}:{item.key}", sample, f"{sample} {item.name[0].lower()}{item.name[1:]}" if item.name[:2] != item.name[:2].upper() else f"{sample} {item.name}"
    return item.key, "Blood" if item.panel != "Blood gas" else "Arterial blood", item.name


def _limit(name: str, sample: str | None = None) -> ph.Limit | None:
    key = ph.resolve(name, sample)
    return ph.limits()[key] if key else None


def _in_limits(x: float, lim: ph.Limit | None, unit: str | None) -> float:
    """``x`` (in ``unit``) clamped into the row's hard limits (converted both ways where the units differ)."""
    if lim is None:
        return max(0.0, x)
    unit = ph.normalize_unit(unit)
    if not unit or not lim.unit or normalize_name(unit) == normalize_name(lim.unit):
        return lim.clamp(x)
    try:
        y = convert(x, unit, lim.unit, lim.analyte)
        return convert(lim.clamp(y), lim.unit, unit, lim.analyte) if not lim.min <= y <= lim.max else x
    except (UnitError, ValueError, TypeError):
        return max(0.0, x)


def _fmt_in(y: float, dec: int, lim: ph.Limit | None, unit: str | None) -> str:
    """``y`` charted to ``dec`` decimals, moved one digit inward when rounding left the limits."""
    s = _fmt(y, dec)
    if lim is None or _in_limits(float(s), lim, unit) == float(s):
        return s
    q = 10 ** -dec
    for cand in (float(s) + q, float(s) - q):
        t = _fmt(cand, dec)
        if _in_limits(float(t), lim, unit) == float(t):
            return t
    return s


def _history(b: _Builder, x0: float, dec: int, gaps: list[float], avoid: set[str], lim: ph.Limit | None,
             unit: str | None = None) -> list[str]:
    """Earlier measurements before ``x0``, newest first: a walk back in time that moves at most the limit
    row's daily ``step`` per gap (days) and stays inside its hard limits -- a trend, never a redraw."""
    out: list[str] = []
    x = x0
    for days in gaps:
        step = lim.max_step(x, days) if lim is not None else abs(x) * 0.1 * days
        if lim is not None and lim.unit and unit and normalize_name(unit) != normalize_name(lim.unit) and lim.step is not None:
            try:  # an absolute step in the row's unit, expressed in the value's unit
                step = abs(convert(convert(x, unit, lim.unit, lim.analyte) + step, lim.unit, unit, lim.analyte) - x)
            except (UnitError, ValueError, TypeError):
                pass
        quantum = 10 ** -dec
        cand = None
        for _ in range(20):
            y = _in_limits(x + b.rng.choice((-1, 1)) * b.rng.uniform(0.3, 1.0) * step, lim, unit)
            sy = _fmt_in(y, dec, lim, unit)
            if sy not in avoid and float(sy) >= 0:
                cand = (y, sy)
                break
        if cand is None:  # a step below the charted precision: one quantum away, inside the limits
            for y in (x + quantum, x - quantum, x):
                y = _in_limits(y, lim, unit)
                if _fmt_in(y, dec, lim, unit) not in avoid or y == x:
                    cand = (y, _fmt_in(y, dec, lim, unit))
                    break
        x = cand[0]
        out.append(cand[1])
    return out


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
        b.lab_terms[s["name"]] = _lab_term(item, s["name"])
        uln = None
        if uln_for.get(key):
            uln = _numeric(uln_for[key][0][1].value)[0]
        times = [b.now - dt.timedelta(hours=6 * (n - 1 - k)) for k in range(n)]
        avoid = {v for v, _ in s["values"]}
        decoys = sorted([b.now - dt.timedelta(days=d, hours=b.rng.randrange(6)) for d in (1, 2, 3)][: b.rng.randint(1, 3)],
                        reverse=True)  # newest first
        unit0, v0 = s["values"][0][1], float(s["values"][0][0])
        dec = max(len(v.split(".")[1]) if "." in v else 0 for v, _ in s["values"])
        edges = [times[0], *decoys]
        gaps = [(a - c).total_seconds() / 86400 for a, c in zip(edges, edges[1:])]
        hist = _history(b, v0, dec, gaps, avoid, _limit(s["name"], s["sample"]), unit0)
        rows = [(t, v, unit0) for t, v in sorted(zip(decoys, hist))]
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
        for calc, inp, k in s["inputs"]:
            b.place(calc, inp, "laboratory_result", "test_result", s["values"][k][0], "number", "lab", f"lab:{s['name']}")
        for calc, inp in uln_for.get(key, []):
            b.place(calc, inp, "laboratory_result", "normal_high", f"{uln:g}", "number", "lab", f"lab:{s['name']}")


def _lab_term(item: lx.LabItem, name: str) -> str:
    """The case-insensitive pattern a clinician would search a lab by: its common name ("sodium",
    "urea nitrogen", "bilirubin"), prefixed by the sample for non-blood samples ("%urine%sodium%")."""
    term = re.sub(r"\s*\(.*?\)", "", item.name).strip()
    term = re.sub(r"^total |\s+count$", "", term, flags=re.I).lower()
    if len(term) <= 2 and name == item.name:  # "pH": a pattern would match "phosphate", "lymphocytes"
        return name
    pattern = f"%{term}%" if name == item.name else f"%{name.split()[0].lower()}%{term}%"
    return pattern if _ilike(pattern, name) else name


def _ilike(pattern: str, text: str) -> bool:
    """PostgreSQL ``text ILIKE pattern`` for patterns with ``%`` wildcards only."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("%"))), text, re.I | re.S) is not None


def _normal(b: _Builder, item: lx.LabItem) -> float:
    lo = item.low if item.low is not None else 0.0
    hi = item.high if item.high is not None else lo * 1.3 + 1
    return b.rng.uniform(lo + 0.15 * (hi - lo), hi - 0.15 * (hi - lo))


def _irrelevant_labs(b: _Builder) -> None:
    used = {r["test_item_name"] for r in b.rows["laboratory_result"]}
    pool = [i for i in lx.LABS if i.name not in used and i.panel in ("Complete blood count", "Basic metabolic panel", "Liver function", "Coagulation")]
    for item in b.rng.sample(pool, min(4, len(pool))):
        times = [b.now - dt.timedelta(days=d, hours=b.rng.randrange(1, 5)) for d in (0, 1)]  # newest first
        x0 = _normal(b, item)
        older = _history(b, x0, item.decimals, [(times[0] - times[1]).total_seconds() / 86400], set(),
                         _limit(item.name), item.unit)
        for t, v in ((times[1], older[0]), (times[0], _fmt(x0, item.decimals))):
            b.rows["laboratory_result"].append(dict(
                medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, report_id=f"LR{t:%Y%m%d%H%M}{b.pid[-4:]}",
                report_item_id=b.uid("LI"), campus_name=CAMPUS, visit_type="Inpatient", test_report_name=item.panel,
                test_item_name=item.name, test_result=v, unit=item.unit, sample_name="Blood",
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
    base = _base_vitals(b)
    days = [b.now - dt.timedelta(days=d, hours=b.rng.randrange(4)) for d in (1, 2, 3)]  # newest first
    first = b.now - dt.timedelta(hours=4 * extra)  # the earliest truth row
    gaps = [(a - c).total_seconds() / 86400 for a, c in zip([first, *days], days)]
    hist: dict[str, list[str]] = {}
    for v in lx.VITALS:
        if v.column == "pulse" and "pulse" not in truth:
            continue
        x0 = float(truth[v.column][0]) if v.column in truth else base[v.column]
        avoid = set(truth.get(v.column, ()))
        hist[v.column] = _history(b, x0, v.decimals, gaps, avoid, ph.limits().get(v.column), v.unit)
    rows = []
    for k in (2, 1, 0):  # oldest first
        rows.append((days[k], {c: hist[c][k] for c in hist}))
    for k in range(extra + 1):  # the last row is the most recent: every column's last truth value
        t = b.now - dt.timedelta(hours=4 * (extra - k))
        row = {}
        for c in cols:
            vals = truth.get(c)
            if vals:
                idx = len(vals) - 1 - (extra - k)
                if idx >= 0:
                    row[c] = vals[idx]
            elif k == extra and c != "pulse":
                row[c] = _fmt(base[c], next(v.decimals for v in lx.VITALS if v.column == c))
        rows.append((t, row))
    for t, row in rows:
        b.rows["vital_signs"].append(dict(
            medical_institution_code=INSTITUTION, patient_id=b.pid, visit_id=b.vid, vs_id=b.uid("VS"), campus_name=CAMPUS,
            patient_name=b.name, dept_name=b.dept, bed_no=None, plan_time=t, measure_time=t,
            days_in_hospital=max(0, (t - b.admit).days), create_time=t, update_time=t, is_valid=True, **row))
    for calc, inp, col, val, match in who:
        b.place(calc, inp, "vital_signs", col, val, match, "vital", f"vital:{col}")


def _base_vitals(b: _Builder) -> dict[str, float]:
    """Today's untracked vitals for the patient's age: adult ranges, or a child's by the APLS weight
    (2 x age + 8 kg; 0.5 x months + 4 kg in infancy) and Weech length (6 x age + 77 cm) rules."""
    base = {v.column: b.rng.uniform(v.low, v.high) for v in lx.VITALS}
    years = b.age_days / 365.25
    if years >= 16:
        return base
    months = b.age_days / 30.44
    u = b.rng.uniform
    if years < 1:
        w, h, hr, rr, sbp = 0.5 * months + 3.5, 50 + 2.1 * months, u(110, 160), u(30, 50), u(65, 85)
    else:
        w, h = 2 * years + 8 if years < 6 else 3 * years + 7, min(175.0, 6 * years + 77)
        hr, rr, sbp = u(80, 130) - 3 * years, u(20, 30) - 0.6 * years, u(85, 100) + 1.5 * years
    base.update(weight=w * u(0.9, 1.1), height=h * u(0.97, 1.03), heart_rate=hr, pulse=hr, breathe=rr,
                systolic_pressure=sbp, diastolic_pressure=0.62 * sbp, urine_volume=base["urine_volume"] * min(1.0, w / 60),
                income_volume=base["income_volume"] * min(1.0, w / 60))
    return base


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
        b.place(calc, inp, "anethesia_record", col, val, "verbatim", "anesthesia", "anesthesia")


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
        b.place(calc, inp, "order_inpatient", "once_dose", f"{num:g}", "number", "medication", "order")


# -- free text ----------------------------------------------------------------------------------
@dataclass
class _Text:
    table: str
    column: str
    key_col: str
    key: str
    lines: list[str]
    members: list[tuple]  # (calc, inp, line)

    @property
    def source(self) -> str:
        return {"admission_record": "history", "order_inpatient": "order"}.get(self.table, f"exam:{self.key}")


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
        for calc, inp, line in sec.members:
            b.place(calc, inp, sec.table, sec.column, line, "verbatim", sec.source.split(":")[0], sec.source)
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
                if p.source == sec.source and p.column == sec.column and p.stored in sec.lines:
                    p.stored = _vstr(p.value)


# -- retrievals ---------------------------------------------------------------------------------
_SOURCES = ("demographic", "vital", "lab", "history", "exam", "order", "anesthesia")
_HISTORY_COLS = ("past_medical_history", "personal_history", "family_history")
# words too generic to find one report by (field text such as "Item 2: Repeat item 1 within 6 seconds")
_STOP = frozenset("""item items patient patients score scores level grade total repeat with without from that this have
 were which side left right each other present absent history value values type time sign signs none than more less
 within seconds second minutes category current date using used days hours degree count after before into over under
 when does their there only also some most much very able unable point points mild moderate severe normal abnormal
 number rate ratio status test result results finding findings assessment clinical yes description descriptor
 severity risk class response requirements persistently available mmhg unit units""".split())


def _plan_retrievals(b: _Builder) -> None:
    """Write the queries a careful agent would run, and point every placement at the one that shows it.

    Calculators are visited in task order; each runs one query per kind of source it still needs
    (labs, vitals, exam reports, ...), and a query's result serves every input whose rows it returns,
    so later calculators reuse earlier results. Queries use only what the agent knows (the
    patient_id, the schema, the clinical concept): never a row id or an exact timestamp."""
    placed = b.report.placed
    rank: dict[str, int] = {}
    for a in sorted(b.task.calculator_answers, key=lambda a: a.order):
        rank.setdefault(a.name, len(rank))
    by_unit: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(placed):
        by_unit[p.source].append(i)
    covered: set[str] = set()
    for calc in sorted({p.calculator for p in placed}, key=lambda c: rank.get(c, len(rank))):
        need = list(dict.fromkeys(p.source for p in placed if p.calculator == calc and p.source not in covered))
        for kind in _SOURCES:
            units = [u for u in need if u.split(":", 1)[0] == kind]
            if not units:
                continue
            sql_text, tables, covers = _QUERIES[kind](b, units, [u for u in by_unit if u.split(":", 1)[0] == kind])
            fresh = [u for u in covers if u not in covered]
            covered.update(fresh)
            inputs = sorted(i for u in fresh for i in by_unit[u])
            b.report.retrievals.append(Retrieval(sql_text, inputs, calc, kind, tables))
            for i in inputs:
                placed[i].query = sql_text


def _q_demographic(b: _Builder, units, all_units):
    return (f"SELECT p.gender, p.birth_date, p.ethnicity, v.patient_age, v.patient_age_unit FROM patient_information p "
            f"JOIN visit_inpatient v ON v.patient_id = p.patient_id WHERE p.patient_id = {_lit(b.pid)}",
            ["patient_information", "visit_inpatient"], units)


def _q_vital(b: _Builder, units, all_units):
    cols = [u.split(":", 1)[1] for u in units]
    cond = " OR ".join(f"{c} IS NOT NULL" for c in cols)
    cond = f"({cond})" if len(cols) > 1 else cond
    return (f"SELECT measure_time, {', '.join(cols)} FROM vital_signs WHERE patient_id = {_lit(b.pid)} AND {cond} "
            f"ORDER BY measure_time DESC", ["vital_signs"], units)


def _q_lab(b: _Builder, units, all_units):
    names = [u.split(":", 1)[1] for u in units]
    pats = list(dict.fromkeys(b.lab_terms.get(n, n) for n in names))
    conds = [f"test_item_name ILIKE {_lit(p)}" if "%" in p else f"test_item_name = {_lit(p)}" for p in pats]
    cond = f"({' OR '.join(conds)})" if len(conds) > 1 else conds[0]
    covers = [u for u in all_units if any(_ilike(p, u.split(":", 1)[1]) for p in pats)]
    return (f"SELECT test_item_name, test_result, unit, reference_range, report_time FROM laboratory_result "
            f"WHERE patient_id = {_lit(b.pid)} AND {cond} ORDER BY test_item_name, report_time DESC",
            ["laboratory_result"], list(dict.fromkeys(units + covers)))


def _q_history(b: _Builder, units, all_units):
    used = {b.report.placed[i].column for i, p in enumerate(b.report.placed) if p.source == "history"}
    cols = [c for c in _HISTORY_COLS if c in used] or list(_HISTORY_COLS)
    return (f"SELECT {', '.join(cols)} FROM admission_record WHERE patient_id = {_lit(b.pid)}", ["admission_record"], units)


def _q_order(b: _Builder, units, all_units):
    return (f"SELECT order_name, once_dose, dose_unit, frequency, order_advice, order_begin_time FROM order_inpatient "
            f"WHERE patient_id = {_lit(b.pid)} ORDER BY order_begin_time", ["order_inpatient"], units)


def _q_anesthesia(b: _Builder, units, all_units):
    cols = list(dict.fromkeys(p.column for p in b.report.placed if p.source == "anesthesia"))
    return (f"SELECT {', '.join(cols)} FROM anethesia_record WHERE patient_id = {_lit(b.pid)}", ["anethesia_record"], units)


def _q_exam(b: _Builder, units, all_units):
    """Reports are found by a word of the clinical concept the agent is looking for (from the
    input's field, e.g. ``exam_findings ILIKE '%bradykinesia%'``); if some report has no such word,
    all of the patient's reports are read."""
    texts = {r["report_id"]: (r.get("exam_findings") or "") for r in b.rows["examination_report"] if r["patient_id"] == b.pid}
    head = f"SELECT report_name, exam_time, exam_findings FROM examination_report WHERE patient_id = {_lit(b.pid)}"
    words: list[str] = []
    for u in units:
        rid = u.split(":", 1)[1]
        fields = [b.report.placed[i].field for i, p in enumerate(b.report.placed) if p.source == u]
        w = _keyword(fields, texts.get(rid, ""), [t for r, t in texts.items() if r != rid])
        if w is None:
            return f"{head} ORDER BY exam_time DESC", ["examination_report"], all_units
        if w not in words:
            words.append(w)
    conds = [f"exam_findings ILIKE {_lit(f'%{w}%')}" for w in words]
    cond = f"({' OR '.join(conds)})" if len(conds) > 1 else conds[0]
    covers = [u for u in all_units if any(w in texts.get(u.split(":", 1)[1], "").lower() for w in words)]
    return f"{head} AND {cond} ORDER BY exam_time DESC", ["examination_report"], list(dict.fromkeys(units + covers))


def _keyword(fields: list[str], text: str, others: list[str]) -> str | None:
    """The most specific word of the inputs' fields found in ``text``: in the fewest other reports,
    then the longest, then the first."""
    low = text.lower()
    for min_len in (4, 3):
        cands = list(dict.fromkeys(w.lower() for f in fields for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", f)
                                   if len(w) >= min_len and w.lower() not in _STOP and w.lower() in low))
        if cands:
            return min(cands, key=lambda w: (sum(w in o.lower() for o in others), -len(w)))
    return None


_QUERIES = {"demographic": _q_demographic, "vital": _q_vital, "lab": _q_lab, "history": _q_history, "exam": _q_exam,
            "order": _q_order, "anesthesia": _q_anesthesia}


# -- distractors --------------------------------------------------------------------------------
def _distractor(b: _Builder, k: int) -> None:
    """Another patient on the same ward with the same kinds of data, different values."""
    r = random.Random(f"{b.seed}:{b.task.task_id}:d{k}")
    pid = f"P{hashlib.sha1(f'{b.pid}:{k}:{b.seed}'.encode()).hexdigest()[:10]}"
    vid = f"V{hashlib.sha1(f'{pid}:v'.encode()).hexdigest()[:10]}"
    sex = r.choice(["Male", "Female"])
    name = f"{r.choice(FIRST[sex])} {r.choice(LAST)}"
    # a ward-mate of a similar age (a neonate's neighbours are neonates), so the copied vitals fit
    age_days = int(b.age_days * r.uniform(0.7, 1.3)) + r.randrange(0, 10) if b.age_days < 18 * 365.25 \
        else int(r.randint(25, 90) * 365.25) + r.randrange(300)
    age, age_unit = ((age_days // 365, "years") if age_days >= 730 else
                     (age_days // 30, "months") if age_days >= 60 else (age_days, "days"))
    b.report.distractor_patients.append(pid)
    b.rows["patient_information"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=pid, campus_name=CAMPUS, patient_name=name, gender=sex,
        birth_date=b.now.date() - dt.timedelta(days=age_days), ethnicity=r.choice(ETHNICITIES),
        source_system="HIS", is_valid=True))
    b.rows["visit_inpatient"].append(dict(
        medical_institution_code=INSTITUTION, patient_id=pid, visit_id=vid, visit_type="Inpatient", campus_name=CAMPUS,
        patient_name=name, gender=sex, patient_age=age, patient_age_unit=age_unit, admission_time=b.admit - dt.timedelta(days=r.randrange(5)),
        admission_dept_name=b.dept, current_dept_name=b.dept, is_valid=True))
    for row in [x for x in b.rows["laboratory_result"] if x["patient_id"] == b.pid][:40]:
        v = row["test_result"]
        try:
            dec = len(v.split(".")[1]) if "." in v else 0
            lim = _limit(row["test_item_name"], row.get("sample_name"))
            step = lim.max_step(float(v), 3.0) if lim is not None else 0.3 * abs(float(v))
            nv = _fmt_in(_in_limits(float(v) + r.uniform(-1, 1) * step, lim, row.get("unit")), dec, lim, row.get("unit"))
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
                    lim = ph.limits().get(v.column)
                    x = float(new[v.column])
                    step = lim.max_step(x, 2.0) if lim is not None else 0.15 * abs(x)
                    new[v.column] = _fmt_in(_in_limits(x + r.uniform(-1, 1) * step, lim, v.unit), v.decimals, lim, v.unit)
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
