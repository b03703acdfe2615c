"""Heart-rate corrections of the QT interval: Bazett, Fridericia, Framingham, Hodges, Rautaharju.

Each takes the measured QT (ms) and heart rate (beats/min); RR = 60 / HR seconds."""

from __future__ import annotations

from calcmate.calculators._common import HEART_RATE
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain

QT = Input("qt", "QT interval", unit="ms", min=150, max=800, aliases=("QT interval", "QT", "measured QT"))

_BANDS = (
    Band("Normal (<450 ms; women <460 ms)", None, 450),
    Band("Prolonged (450-499 ms; women ≥460 ms abnormal)", 450, 500),
    Band("Markedly prolonged (≥500 ms): high risk of torsades de pointes", 500, None),
)
_WHEN = "Assessing QT prolongation (drug effects, electrolyte disturbance, congenital long QT) at a known heart rate."


def _rr(v) -> float:
    return 60.0 / v["heart_rate"]


def _qtc(id, name, aliases, mcb_id, compute, formula, citation, examples, notes=""):
    return Calculator(
        id=id, name=name, aliases=aliases, domain=Domain.CRITICAL_CARE, medcalc_bench_id=mcb_id,
        tags=("cardiology", "ecg", "arrhythmia", "drug safety"), produces=("qtc",),
        inputs=(QT, HEART_RATE), compute=compute,
        output=Output("decimal", "ms", 1, "QTc"), bands=_BANDS,
        reference=Reference(
            purpose="Corrects the QT interval for heart rate.", when_to_use=_WHEN,
            formula=formula + " RR (s) = 60 / heart rate.", citation=citation, notes=notes,
        ),
        examples=examples,
    )


BAZETT = _qtc(
    "qtc_bazett", "QTc Bazett Calculator",
    ("Bazett", "QTc Bazett", "Corrected QT Interval (QTc)", "Bazett formula"), 11,
    lambda v: v["qt"] / _rr(v) ** 0.5,
    "QTc = QT / √RR.",
    "Bazett HC. An analysis of the time-relations of electrocardiograms. Heart. 1920;7:353-370.",
    (Example({"qt": 360, "heart_rate": 80}, 415.7, "Hand-computed from Bazett 1920: RR 0.75 s; 360/√0.75 = 415.69", 0.05),
     Example({"qt": 400, "heart_rate": 60}, 400.0, "At 60/min RR = 1 s, so QTc = QT (Bazett 1920)", 0.05)),
    notes="Over-corrects at high and under-corrects at low heart rates; prefer Fridericia or Framingham then. "
    "MedMCP-Calc's 'Corrected QT Interval (QTc)' is taken as Bazett, the default of that MDCalc calculator.",
)
FRIDERICIA = _qtc(
    "qtc_fridericia", "QTc Fridericia Calculator",
    ("Fridericia", "QTc Fridericia", "QTc (Fridericia) Correction Calculator"), 56,
    lambda v: v["qt"] / _rr(v) ** (1 / 3),
    "QTc = QT / RR^(1/3).",
    "Fridericia LS. Die Systolendauer im Elektrokardiogramm bei normalen Menschen und bei Herzkranken. "
    "Acta Med Scand. 1920;53:469-486.",
    (Example({"qt": 360, "heart_rate": 80}, 396.2, "Hand-computed from Fridericia 1920: 360/0.75^(1/3) = 396.23", 0.05),),
)
FRAMINGHAM = _qtc(
    "qtc_framingham", "QTc Framingham Calculator",
    ("Framingham QTc", "QTc Framingham", "Sagie QTc"), 57,
    lambda v: v["qt"] + 154 * (1 - _rr(v)),
    "QTc = QT + 154 × (1 − RR).",
    "Sagie A, Larson MG, Goldberg RJ, Bengtson JR, Levy D. An improved method for adjusting the QT interval for "
    "heart rate (the Framingham Heart Study). Am J Cardiol. 1992;70(7):797-801.",
    (Example({"qt": 360, "heart_rate": 80}, 398.5, "Hand-computed from Sagie 1992: 360 + 154*(1-0.75) = 398.5", 0.05),),
)
HODGES = _qtc(
    "qtc_hodges", "QTc Hodges Calculator",
    ("Hodges QTc", "QTc Hodges"), 58,
    lambda v: v["qt"] + 1.75 * (v["heart_rate"] - 60),
    "QTc = QT + 1.75 × (HR − 60).",
    "Hodges M, Salerno D, Erlien D. Bazett's QT correction reviewed: evidence that a linear QT correction for heart "
    "rate is better. J Am Coll Cardiol. 1983;1(2):694.",
    (Example({"qt": 360, "heart_rate": 80}, 395.0, "Hand-computed from Hodges 1983: 360 + 1.75*(80-60) = 395", 0.05),),
)
RAUTAHARJU = _qtc(
    "qtc_rautaharju", "QTc Rautaharju Calculator",
    ("Rautaharju QTc", "QTc Rautaharju"), 59,
    lambda v: v["qt"] * (120 + v["heart_rate"]) / 180,
    "QTc = QT × (120 + HR) / 180.",
    "Rautaharju PM, Mason JW, Akiyama T. New age- and sex-specific criteria for QT prolongation based on rate "
    "correction formulas that account for bradycardia. Int J Cardiol. 2014;174(3):535-540.",
    (Example({"qt": 360, "heart_rate": 80}, 400.0, "Hand-computed from Rautaharju 2014: 360*(120+80)/180 = 400", 0.05),),
)

CALCULATORS = [BAZETT, FRIDERICIA, FRAMINGHAM, HODGES, RAUTAHARJU]
