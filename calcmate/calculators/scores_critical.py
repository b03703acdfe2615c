"""ICU severity scores: APACHE II and SOFA.

APACHE II scores physiology not measured as normal (Knaus 1985); SOFA needs the measured organ
variables, but treats vasopressors, ventilation and hypotension that are not documented as absent.
"""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import (
    AGE,
    BICARBONATE,
    CREATININE,
    DBP,
    HEART_RATE,
    RESP_RATE,
    SBP,
    SODIUM,
    TEMPERATURE,
    optional,
)
from calcmate.calculators.scores_cardiovascular import crit
from calcmate.calculators.scores_infection import HEMATOCRIT, PAO2, PH, WBC
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain


FIO2 = Input("fio2", "FiO₂", unit="%", min=0.21, max=100, aliases=("FiO₂", "FiO2", "Fraction of inspired oxygen"),
             help="Percent (21–100); a value ≤ 1 is read as a fraction (0.6 = 60%).")
PACO2 = Input("paco2", "PaCO₂", unit="mmHg", min=5, max=200, optional=True, aliases=("PaCO₂", "PaCO2"))
MAP = Input("map", "Mean arterial pressure", unit="mmHg", min=10, max=250, optional=True,
            aliases=("Mean Arterial Pressure", "Mean arterial pressure (MAP)", "MAP"),
            help="Optional; otherwise computed from SBP and DBP as (SBP + 2·DBP) / 3.")
GCS_TOTAL = Input("gcs", "Glasgow Coma Scale", type="integer", min=3, max=15,
                  aliases=("Glasgow Coma Score", "Glasgow Coma Scale", "GCS"))
POTASSIUM = Input("potassium", "Potassium", unit="mEq/L", analyte="potassium", min=1, max=12,
                  aliases=("Potassium", "K", "serum potassium"))


def _fio2_pct(x: float) -> float:
    return x * 100 if x <= 1 else x


def _map(v) -> float | None:
    if v.get("map") is not None:
        return v["map"]
    if v.get("sbp") is not None and v.get("dbp") is not None:
        return (v["sbp"] + 2 * v["dbp"]) / 3
    return None


def _band(x: float, table: list[tuple[float, int]], below: int) -> int:
    """Points for ``x``: the first ``(threshold, points)`` with ``x >= threshold``, else ``below``."""
    for lo, p in table:
        if x >= lo:
            return p
    return below


# -- APACHE II -----------------------------------------------------------------------------------------
def _apache_oxygenation(v) -> tuple[int, dict]:
    fio2 = _fio2_pct(v["fio2"]) / 100
    if fio2 >= 0.5:
        aa = v["aa_gradient"]
        if aa is None and v["pao2"] is not None and v["paco2"] is not None:
            aa = fio2 * (760 - 47) - v["paco2"] / 0.8 - v["pao2"]
        if aa is None:
            return 0, {"oxygenation_basis": "not measured"}
        return _band(aa, [(500, 4), (350, 3), (200, 2)], 0), {"oxygenation_basis": "A-a gradient", "aa_gradient": aa}
    if v["pao2"] is None:
        return 0, {"oxygenation_basis": "not measured"}
    p = v["pao2"]
    return (0 if p > 70 else 1 if p >= 61 else 3 if p >= 55 else 4), {"oxygenation_basis": "PaO2"}


def _apache_ii(v):
    m = _map(v)
    creat = _band(v["creatinine"], [(3.5, 4), (2.0, 3), (1.5, 2), (0.6, 0)], 2)
    if v["ph"] is not None:
        acid = _band(v["ph"], [(7.7, 4), (7.6, 3), (7.5, 1), (7.33, 0), (7.25, 2), (7.15, 3)], 4)
    elif v["bicarbonate"] is not None:
        acid = _band(v["bicarbonate"], [(52, 4), (41, 3), (32, 1), (22, 0), (18, 2), (15, 3)], 4)
    else:
        acid = 0
    oxy, oxy_details = _apache_oxygenation(v)
    aps = {
        "temperature": _band(v["temperature"], [(41, 4), (39, 3), (38.5, 1), (36, 0), (34, 1), (32, 2), (30, 3)], 4),
        "map": 0 if m is None else _band(m, [(160, 4), (130, 3), (110, 2), (70, 0), (50, 2)], 4),
        "heart_rate": _band(v["heart_rate"], [(180, 4), (140, 3), (110, 2), (70, 0), (55, 2), (40, 3)], 4),
        "resp_rate": _band(v["resp_rate"], [(50, 4), (35, 3), (25, 1), (12, 0), (10, 1), (6, 2)], 4),
        "oxygenation": oxy,
        "acid_base": acid,
        "sodium": _band(v["sodium"], [(180, 4), (160, 3), (155, 2), (150, 1), (130, 0), (120, 2), (111, 3)], 4),
        "potassium": _band(v["potassium"], [(7, 4), (6, 3), (5.5, 1), (3.5, 0), (3, 1), (2.5, 2)], 4),
        "creatinine": creat * 2 if v["acute_renal_failure"] else creat,
        "hematocrit": _band(v["hematocrit"], [(60, 4), (50, 2), (46, 1), (30, 0), (20, 2)], 4),
        "wbc": _band(v["wbc"], [(40, 4), (20, 2), (15, 1), (3, 0), (1, 2)], 4),
        "gcs": 15 - v["gcs"],
    }
    a = v["age"]
    age_pts = 6 if a >= 75 else 5 if a >= 65 else 3 if a >= 55 else 2 if a >= 45 else 0
    chronic, assumed = 0, {}
    if v["organ_insufficiency"]:
        if v["admission"] is None:
            # Knaus 1985: 2 points only for an *elective postoperative* patient, 5 for nonoperative or emergency
            # postoperative. With no operation reported the patient is a nonoperative admission (the same
            # convention as any criterion not documented: no operation is scored as none), so 5.
            chronic = 5
            assumed = {"admission_assumed": "Nonoperative (no operation reported; Knaus 1985 gives 2 points only "
                                            "to elective postoperative patients)"}
        else:
            chronic = v["admission"]
    total = sum(aps.values()) + age_pts + chronic
    return total, {**aps, "acute_physiology_score": sum(aps.values()), "age": age_pts, "chronic_health": chronic,
                   "map_value": m, **oxy_details, **assumed}


APACHE_II = Calculator(
    id="apache_ii",
    name="APACHE II Score",
    aliases=("APACHE II", "Acute Physiology and Chronic Health Evaluation II"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=28,
    tags=("critical care", "ICU", "mortality", "severity"),
    inputs=(
        AGE,
        optional(TEMPERATURE, 37.0),
        optional(SBP),
        optional(DBP),
        MAP,
        optional(HEART_RATE, 80.0),
        optional(RESP_RATE, 16.0),
        optional(FIO2, 21.0),
        optional(PAO2),
        Input("aa_gradient", "A-a gradient", unit="mmHg", min=-50, max=800, optional=True,
              aliases=("A-a gradient", "A-a gradient (mmHg)", "Alveolar-arterial gradient"),
              help="Used when FiO₂ ≥ 50%; otherwise computed from PaO₂ and PaCO₂ at sea level if both are given."),
        PACO2,
        optional(PH),
        optional(BICARBONATE),
        optional(SODIUM, 140.0),
        optional(POTASSIUM, 4.0),
        optional(CREATININE, 1.0),
        crit("acute_renal_failure", "Acute renal failure", "Acute renal failure", "ARF",
             help="Doubles the creatinine points."),
        crit("chronic_renal_failure", "Chronic renal failure", "Chronic Renal Failure",
             help="Recorded only: chronic kidney failure does not double the creatinine points; chronic dialysis "
             "counts as severe organ insufficiency (set that item)."),
        optional(HEMATOCRIT, 40.0),
        optional(WBC, 8.0),
        optional(GCS_TOTAL, 15),
        crit("organ_insufficiency", "History of severe organ insufficiency or immunocompromise",
             "History of severe organ failure or immunocompromise",
             help="Biopsy-proven cirrhosis with portal hypertension, NYHA IV heart failure, severe COPD, chronic "
             "dialysis, or immunocompromise."),
        Input("admission", "Admission type", type="choice", optional=True, aliases=("Surgery Type", "Admission type"),
              choices=(Choice("Nonoperative", 5, ("nonoperative", "non-operative", "medical")),
                       Choice("Emergency postoperative", 5, ("emergency", "emergency postoperative", "emergency surgery")),
                       Choice("Elective postoperative", 2, ("elective", "elective postoperative", "elective surgery"))),
              help="Needed only with severe organ insufficiency: nonoperative or emergency postoperative 5, elective "
              "postoperative 2. Not given: no operation, i.e. nonoperative (5)."),
    ),
    compute=_apache_ii,
    output=Output("integer", "points", label="APACHE II score"),
    bands=(
        Band("0–4: ~4% ICU mortality", None, 5),
        Band("5–9: ~8%", 5, 10),
        Band("10–14: ~15%", 10, 15),
        Band("15–19: ~25%", 15, 20),
        Band("20–24: ~40%", 20, 25),
        Band("25–29: ~55%", 25, 30),
        Band("30–34: ~75%", 30, 35),
        Band("≥ 35: ~85%", 35, None),
    ),
    reference=Reference(
        purpose="Estimates ICU mortality from acute physiology, age and chronic health in the first 24 hours.",
        when_to_use="Adult ICU patients, using the worst values of the first 24 hours.",
        formula="APACHE II = Acute Physiology Score (12 variables) + age points + chronic health points.\n\n"
        "| Variable | +4 | +3 | +2 | +1 | 0 | +1 | +2 | +3 | +4 |\n|---|---|---|---|---|---|---|---|---|---|\n"
        "| Temp °C | ≥ 41 | 39–40.9 | | 38.5–38.9 | 36–38.4 | 34–35.9 | 32–33.9 | 30–31.9 | ≤ 29.9 |\n"
        "| MAP mmHg | ≥ 160 | 130–159 | 110–129 | | 70–109 | | 50–69 | | ≤ 49 |\n"
        "| Heart rate | ≥ 180 | 140–179 | 110–139 | | 70–109 | | 55–69 | 40–54 | ≤ 39 |\n"
        "| Resp rate | ≥ 50 | 35–49 | | 25–34 | 12–24 | 10–11 | 6–9 | | ≤ 5 |\n"
        "| FiO₂ ≥ 0.5: A-a DO₂ | ≥ 500 | 350–499 | 200–349 | | < 200 | | | | |\n"
        "| FiO₂ < 0.5: PaO₂ | | | | | > 70 | 61–70 | | 55–60 | < 55 |\n"
        "| Arterial pH | ≥ 7.7 | 7.6–7.69 | | 7.5–7.59 | 7.33–7.49 | | 7.25–7.32 | 7.15–7.24 | < 7.15 |\n"
        "| Sodium | ≥ 180 | 160–179 | 155–159 | 150–154 | 130–149 | | 120–129 | 111–119 | ≤ 110 |\n"
        "| Potassium | ≥ 7 | 6–6.9 | | 5.5–5.9 | 3.5–5.4 | 3–3.4 | 2.5–2.9 | | < 2.5 |\n"
        "| Creatinine mg/dL (×2 if ARF) | ≥ 3.5 | 2–3.4 | 1.5–1.9 | | 0.6–1.4 | | < 0.6 | | |\n"
        "| Hematocrit % | ≥ 60 | | 50–59.9 | 46–49.9 | 30–45.9 | | 20–29.9 | | < 20 |\n"
        "| WBC ×10³/mm³ | ≥ 40 | | 20–39.9 | 15–19.9 | 3–14.9 | | 1–2.9 | | < 1 |\n\n"
        "GCS term = 15 − GCS. Serum HCO₃⁻ replaces pH when no arterial gas. Age ≤ 44 0, 45–54 2, 55–64 3, "
        "65–74 5, ≥ 75 6. Chronic health (severe organ insufficiency or immunocompromise): nonoperative or "
        "emergency postoperative 5, elective postoperative 2. With no operation reported the admission is "
        "nonoperative (5 points).",
        citation="Knaus WA, Draper EA, Wagner DP, Zimmerman JE. APACHE II: a severity of disease classification "
        "system. Crit Care Med. 1985;13(10):818-829.",
        notes="Physiologic variables not measured are scored normal, as Knaus 1985 prescribes; their defaults are "
        "normal values. Temperatures in MedCalc-Bench written 'degrees celsisus' are Celsius. MedCalc-Bench v1.0 "
        "labels use a wrong GCS term; see docs/known-label-issues.md for labels that read 'celsisus' as Fahrenheit.",
    ),
    examples=(
        Example({"age": 48, "temperature": 38.7, "sbp": 100, "dbp": 60, "heart_rate": 118, "resp_rate": 24,
                 "fio2": 30, "pao2": 68, "ph": 7.31, "sodium": 133, "potassium": 3.3, "creatinine": 1.7,
                 "hematocrit": 38, "wbc": 16.0, "gcs": 13, "organ_insufficiency": True,
                 "admission": "Emergency postoperative"}, 19,
                "Hand-computed from Knaus 1985's tables: temp 38.7 1 + MAP 73 0 + HR 118 2 + RR 24 0 + PaO₂ 68 1 + "
                "pH 7.31 2 + Na 0 + K 3.3 1 + creatinine 1.7 2 + Hct 0 + WBC 16 1 + GCS 13 2 = APS 12; "
                "+ age 48 2 + emergency postoperative 5"),
        Example({"age": 70, "temperature": 39.5, "map": 60, "heart_rate": 145, "resp_rate": 36, "fio2": 0.6,
                 "aa_gradient": 380, "ph": 7.2, "sodium": 125, "potassium": 3.2, "creatinine": 2.2,
                 "acute_renal_failure": True, "hematocrit": 28, "wbc": 22, "gcs": 10}, 40,
                "Hand-computed from Knaus 1985's tables: temp 3 + MAP 2 + HR 3 + RR 3 + A-a 3 + pH 3 + Na 2 + K 1 + "
                "creatinine 3×2 (ARF) + Hct 2 + WBC 2 + GCS 5 = APS 35, + age 5"),
    ),
)


# -- SOFA ------------------------------------------------------------------------------------------
def _sofa(v):
    if v["creatinine"] is None and v["urine_output"] is None:
        raise CalculatorInputError("sofa", "creatinine", "missing: give creatinine or urine output for the renal score")
    pf = v["pao2"] / (_fio2_pct(v["fio2"]) / 100)
    supported = v["mechanical_ventilation"] or v["cpap"]
    resp = 0 if pf >= 400 else 1 if pf >= 300 else 2
    if supported and pf < 200:
        resp = 4 if pf < 100 else 3
    m = _map(v)
    dop, dob, epi, ne = v["dopamine"], v["dobutamine"], v["epinephrine"], v["norepinephrine"]
    if dop > 15 or epi > 0.1 or ne > 0.1:
        cardio = 4
    elif dop > 5 or epi > 0 or ne > 0:
        cardio = 3
    elif dop > 0 or dob > 0:
        cardio = 2
    elif v["hypotension"] or (m is not None and m < 70):
        cardio = 1
    else:
        cardio = 0
    plt, bili, g = v["platelets"], v["bilirubin"], v["gcs"]
    renal = 0
    if v["creatinine"] is not None:
        renal = _band(v["creatinine"], [(5.0, 4), (3.5, 3), (2.0, 2), (1.2, 1)], 0)
    if v["urine_output"] is not None:
        uo = v["urine_output"]
        renal = max(renal, 4 if uo < 200 else 3 if uo < 500 else 0)
    pts = {
        "respiration": resp,
        "coagulation": 4 if plt < 20 else 3 if plt < 50 else 2 if plt < 100 else 1 if plt < 150 else 0,
        "liver": _band(bili, [(12.0, 4), (6.0, 3), (2.0, 2), (1.2, 1)], 0),
        "cardiovascular": cardio,
        "cns": 0 if g == 15 else 1 if g >= 13 else 2 if g >= 10 else 3 if g >= 6 else 4,
        "renal": renal,
    }
    return sum(pts.values()), {**pts, "pao2_fio2": round(pf, 1), "map_value": m}


def _pressor(key: str, label: str, *aliases: str) -> Input:
    return Input(key, label, unit="ug/kg/min", min=0, max=100, optional=True, default=0.0, aliases=aliases,
                 help="µg/kg/min for ≥ 1 hour. Not documented → none (0).")


SOFA = Calculator(
    id="sofa",
    name="Sequential Organ Failure Assessment (SOFA) Score",
    aliases=("SOFA Score", "SOFA", "Sequential Organ Failure Assessment"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=43,
    tags=("critical care", "ICU", "sepsis", "organ failure"),
    inputs=(
        PAO2,
        FIO2,
        crit("mechanical_ventilation", "On mechanical ventilation", "On mechanical ventilation",
             "Mechanical ventilation"),
        crit("cpap", "On CPAP", "Continous positive airway pressure", "Continuous positive airway pressure", "CPAP"),
        Input("platelets", "Platelet count", unit="10^9/L", analyte="count", min=0, max=3000,
              aliases=("Platelet count", "Platelets", "Platelets, ×10³/µL")),
        GCS_TOTAL,
        Input("bilirubin", "Total bilirubin", unit="mg/dL", analyte="bilirubin", min=0.05, max=80,
              aliases=("Bilirubin", "Bilirubin, mg/dL (μmol/L)", "Total bilirubin")),
        MAP,
        optional(SBP),
        optional(DBP),
        crit("hypotension", "Hypotension (MAP < 70 mmHg)", "Hypotension"),
        _pressor("dopamine", "Dopamine", "DOPamine"),
        _pressor("dobutamine", "Dobutamine (any dose)", "DOBUTamine"),
        _pressor("epinephrine", "Epinephrine", "EPINEPHrine"),
        _pressor("norepinephrine", "Norepinephrine", "norEPINEPHrine"),
        optional(replace(CREATININE, aliases=(*CREATININE.aliases, "Creatinine, mg/dL (μmol/L) (or urine output)"))),
        Input("urine_output", "Urine output", unit="mL/day", min=0, max=20000, optional=True,
              aliases=("Urine Output", "Urine output (mL/day)")),
        crit("renal_replacement", "Renal replacement therapy", "Continuous veno-venous hemodialysis for ≥24 hours in the past week",
             help="Recorded only: the 1996 SOFA scores creatinine/urine output, not dialysis itself."),
    ),
    compute=_sofa,
    output=Output("integer", "points", label="SOFA score"),
    bands=(
        Band("0–6: < 10% mortality", None, 7),
        Band("7–9: 15–20% mortality", 7, 10),
        Band("10–12: 40–50% mortality", 10, 13),
        Band("13–14: 50–60% mortality", 13, 15),
        Band("≥ 15: > 80% mortality", 15, None),
    ),
    reference=Reference(
        purpose="Quantifies organ dysfunction in six systems; used to track ICU course and define sepsis (ΔSOFA ≥ 2).",
        when_to_use="ICU patients, daily using the worst value of each 24 h.",
        formula="| System | 1 | 2 | 3 | 4 |\n|---|---|---|---|---|\n"
        "| PaO₂/FiO₂ mmHg | < 400 | < 300 | < 200 with respiratory support | < 100 with respiratory support |\n"
        "| Platelets ×10³/µL | < 150 | < 100 | < 50 | < 20 |\n| Bilirubin mg/dL | 1.2–1.9 | 2.0–5.9 | 6.0–11.9 | ≥ 12 |\n"
        "| Cardiovascular | MAP < 70 | dopamine ≤ 5 or dobutamine (any) | dopamine > 5, epinephrine ≤ 0.1 or "
        "norepinephrine ≤ 0.1 | dopamine > 15, epinephrine > 0.1 or norepinephrine > 0.1 |\n"
        "| GCS | 13–14 | 10–12 | 6–9 | < 6 |\n| Creatinine mg/dL (or urine output) | 1.2–1.9 | 2.0–3.4 | 3.5–4.9 "
        "(or < 500 mL/day) | ≥ 5.0 (or < 200 mL/day) |\n\nWithout respiratory support (mechanical ventilation or "
        "CPAP) the respiratory score is at most 2. Vasopressor doses in µg/kg/min for ≥ 1 h.",
        citation="Vincent JL, Moreno R, Takala J, et al. The SOFA (Sepsis-related Organ Failure Assessment) score to "
        "describe organ dysfunction/failure. Intensive Care Med. 1996;22(7):707-710.",
        notes="PaO₂, FiO₂, platelets, GCS, bilirubin and creatinine or urine output are required. Ventilation, CPAP, "
        "vasopressors and hypotension not documented are taken as absent. Renal score is the worse of creatinine and "
        "urine output. MedCalc-Bench v1.0 labels use older rules (and divide PaO₂ by FiO₂ in %); the maintained "
        "labels match this calculator.",
    ),
    examples=(
        Example({"pao2": 92, "fio2": 40, "platelets": 88, "gcs": 14, "bilirubin": 2.6, "creatinine": 1.5,
                 "dobutamine": 5}, 10,
                "Hand-computed from Vincent 1996's table: P/F 230 2 + dobutamine 2 + GCS 14 1 + bilirubin 2.6 2 + "
                "platelets 88 2 + creatinine 1.5 1"),
        Example({"pao2": 70, "fio2": 0.55, "mechanical_ventilation": True, "platelets": 170, "gcs": 12,
                 "bilirubin": 2.2, "creatinine": 1.2, "urine_output": 800, "norepinephrine": 0.08}, 11,
                "Hand-computed from Vincent 1996's table: P/F 127 ventilated 3 + cardio 3 + GCS 2 + liver 2 + "
                "renal 1"),
        Example({"pao2": "72 mm Hg", "fio2": "70 %", "cpap": True, "platelets": 42, "gcs": 11,
                 "bilirubin": "4.1 mg/dL", "norepinephrine": 0.05, "creatinine": "3.8 mg/dL"}, 16,
                "Hand-computed from Vincent 1996's table: P/F 103 on CPAP 3 + platelets 42 3 + GCS 11 2 + "
                "bilirubin 4.1 2 + norepinephrine ≤ 0.1 3 + creatinine 3.8 3"),
    ),
)

CALCULATORS = [APACHE_II, SOFA]
