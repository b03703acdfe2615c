"""Trauma: anatomical injury severity (ISS) and probability of survival (TRISS)."""

from __future__ import annotations

import math
from dataclasses import replace

from calcmate.calculators._common import AGE, RESP_RATE, SBP
from calcmate.calculators.spec import Band, Calculator, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

_REGIONS = [
    ("head_neck", "Head or neck", ("Head/Neck", "Head and neck")),
    ("face", "Face", ()),
    ("chest", "Chest", ("Thorax",)),
    ("abdomen", "Abdomen or pelvic contents", ("Abdomen", "Abdomen/pelvic contents")),
    ("extremities", "Extremities or pelvic girdle", ("Extremities", "Extremity")),
    ("external", "External", ("External/skin", "Skin")),
]


def _iss(v):
    ais = {k: v[k] for k, _, _ in _REGIONS}
    if any(a == 6 for a in ais.values()):
        return 75, {**ais, "note": "an AIS of 6 sets ISS to 75"}
    top = sorted(ais.values(), reverse=True)[:3]
    return sum(a * a for a in top), ais


ISS = Calculator(
    id="injury_severity_score",
    name="Injury Severity Score (ISS)",
    aliases=("Injury Severity Score", "ISS"),
    domain=Domain.CRITICAL_CARE,
    inputs=tuple(Input(k, f"{lbl} AIS", type="integer", min=0, max=6, aliases=(lbl, *als),
                       help="Highest Abbreviated Injury Scale grade in this region (0 none … 6 unsurvivable).")
                 for k, lbl, als in _REGIONS),
    compute=_iss,
    output=Output("integer", "points", None, "ISS"),
    bands=(
        Band("Minor (1-8)", None, 9), Band("Moderate (9-15)", 9, 16),
        Band("Severe (16-24)", 16, 25), Band("Very severe / major trauma (≥25)", 25, None),
    ),
    tags=("trauma", "emergency", "surgery"),
    produces=("iss",),
    reference=Reference(
        purpose="Anatomical severity of multiple injuries; correlates with mortality and length of stay.",
        when_to_use="Trauma patients once injuries are fully described (AIS-coded), usually after imaging or surgery.",
        formula="ISS = sum of the squares of the highest AIS grade in each of the three most severely injured of six "
        "body regions (head/neck, face, chest, abdomen, extremities, external). Any AIS 6 → ISS 75. Range 0-75.",
        citation="Baker SP, O'Neill B, Haddon W Jr, Long WB. The injury severity score: a method for describing "
        "patients with multiple injuries and evaluating emergency care. J Trauma. 1974;14(3):187-196.",
        notes="ISS >15 is the usual definition of major trauma. Only the single worst injury per region counts.",
    ),
    examples=(
        Example({"head_neck": 4, "face": 0, "chest": 3, "abdomen": 2, "extremities": 2, "external": 1}, 29,
                "Baker 1974 method: 4² + 3² + 2² = 29 (hand-computed)"),
        Example({"head_neck": 6, "face": 0, "chest": 0, "abdomen": 0, "extremities": 0, "external": 0}, 75,
                "Baker 1974 convention: any AIS 6 = 75"),
    ),
)


def _rts_codes(gcs: int, sbp: float, rr: float) -> tuple[int, int, int]:
    g = 4 if gcs >= 13 else 3 if gcs >= 9 else 2 if gcs >= 6 else 1 if gcs >= 4 else 0
    s = 4 if sbp > 89 else 3 if sbp >= 76 else 2 if sbp >= 50 else 1 if sbp >= 1 else 0
    r = 3 if rr > 29 else 4 if rr >= 10 else 2 if rr >= 6 else 1 if rr >= 1 else 0
    return g, s, r


_COEF = {"blunt": (-0.4499, 0.8085, -0.0835, -1.7430), "penetrating": (-2.5355, 0.9934, -0.0651, -1.1360)}


def _triss(v):
    g, s, r = _rts_codes(v["gcs"], v["sbp"], v["resp_rate"])
    rts = 0.9368 * g + 0.7326 * s + 0.2908 * r
    mech = "blunt" if v["age"] < 15 else v["mechanism"]
    b0, b1, b2, b3 = _COEF[mech]
    age_index = 1 if v["age"] >= 55 else 0
    b = b0 + b1 * rts + b2 * v["iss"] + b3 * age_index
    ps = 1 / (1 + math.exp(-b))
    return 100 * ps, {"rts": round(rts, 4), "gcs_code": g, "sbp_code": s, "rr_code": r, "age_index": age_index,
                      "coefficients": mech, "b": round(b, 4)}


TRISS = Calculator(
    id="triss",
    name="Trauma Score and Injury Severity Score (TRISS)",
    aliases=("TRISS", "Trauma and Injury Severity Score", "TRISS probability of survival"),
    domain=Domain.CRITICAL_CARE,
    inputs=(
        AGE,
        Input("mechanism", "Mechanism of injury", type="choice", aliases=("Mechanism", "Injury type", "Type of injury"),
              choices=(Choice("Blunt", "blunt"), Choice("Penetrating", "penetrating"))),
        Input("gcs", "Glasgow Coma Scale", type="integer", min=3, max=15, aliases=("GCS", "Glasgow Coma Score", "Glasgow Coma Scale")),
        replace(SBP, min=0, help="0 when no pulse/blood pressure is obtainable (RTS code 0); 1–49 codes 1."),
        RESP_RATE,
        Input("iss", "Injury Severity Score", type="integer", min=0, max=75, aliases=("ISS", "Injury Severity Score")),
    ),
    compute=_triss,
    output=Output("decimal", "%", 1, "Probability of survival"),
    bands=(
        Band("Probability of survival <25%", None, 25), Band("Probability of survival 25-<50%", 25, 50),
        Band("Probability of survival 50-<75%", 50, 75), Band("Probability of survival ≥75%", 75, None),
    ),
    tags=("trauma", "emergency", "critical care", "mortality"),
    reference=Reference(
        purpose="Probability of survival after trauma from physiology (RTS), anatomy (ISS), age and mechanism.",
        when_to_use="Trauma quality review and outcome benchmarking (unexpected survivors/deaths).",
        formula="RTS = 0.9368·GCSc + 0.7326·SBPc + 0.2908·RRc, with coded values 0-4 (GCS 13-15→4, 9-12→3, 6-8→2, "
        "4-5→1, 3→0; SBP >89→4, 76-89→3, 50-75→2, 1-49→1, 0→0; RR 10-29→4, >29→3, 6-9→2, 1-5→1, 0→0).\n\n"
        "b = b0 + b1·RTS + b2·ISS + b3·AgeIndex (AgeIndex 1 if age ≥55); Ps = 1/(1 + e^−b).\n\n"
        "| | b0 | b1 | b2 | b3 |\n|---|---|---|---|---|\n| Blunt | −0.4499 | 0.8085 | −0.0835 | −1.7430 |\n"
        "| Penetrating | −2.5355 | 0.9934 | −0.0651 | −1.1360 |\n\nUnder 15 years the blunt coefficients are used.",
        citation="Boyd CR, Tolson MA, Copes WS. Evaluating trauma care: the TRISS method. J Trauma. 1987;27(4):370-378. "
        "Coefficients: Champion HR, Copes WS, Sacco WJ, et al. The Major Trauma Outcome Study: establishing national "
        "norms for trauma care. J Trauma. 1990;30(11):1356-1365.",
        notes="Uses the MTOS (Champion 1990) coefficients, the ones in common use; Boyd 1987 published earlier values and "
        "a 2009 NTDB revision exists (Schluter 2010). The RTS is in the details.",
    ),
    examples=(
        Example({"age": 28, "mechanism": "blunt", "gcs": 15, "sbp": 120, "resp_rate": 16, "iss": 9}, 99.4,
                "TRISS with MTOS blunt coefficients: RTS 7.8408, b = 5.1379, Ps = 99.4% (hand-computed)", 0.05),
        Example({"age": 60, "mechanism": "penetrating", "gcs": 8, "sbp": 80, "resp_rate": 32, "iss": 25}, 40.4,
                "TRISS with MTOS penetrating coefficients: RTS = 0.9368·2 + 0.7326·3 + 0.2908·3 = 4.9438; "
                "b = −2.5355 + 0.9934·4.9438 − 0.0651·25 − 1.1360 = −0.3878; Ps = 40.4% (hand-computed)", 0.05),
    ),
)

CALCULATORS = [ISS, TRISS]
