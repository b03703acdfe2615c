"""Pregnancy dating: estimated due date (Naegele with cycle-length adjustment), estimated date of
conception, and gestational age."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from calcmate.calculators.spec import Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain

LMP = Input("lmp", "Last menstrual period (first day)", type="date",
            aliases=("Last menstrual date", "LMP", "last menstrual period", "Last menstrual period date"))
CYCLE = Input("cycle_length", "Menstrual cycle length", type="integer", unit="day", min=20, max=45, optional=True,
              default=28, aliases=("cycle length", "Cycle length (days)", "menstrual cycle length"),
              help="days; default 28")

_ACOG = ("American College of Obstetricians and Gynecologists. Committee Opinion No. 700: Methods for Estimating "
         "the Due Date. Obstet Gynecol. 2017;129(5):e150-e154.")


def _due_date(v):
    shift = v["cycle_length"] - 28
    return v["lmp"] + dt.timedelta(days=280 + shift), {"cycle_adjustment_days": shift}


DUE_DATE = Calculator(
    id="estimated_due_date",
    name="Estimated Due Date",
    aliases=("Pregnancy Due Dates Calculator", "EDD", "Naegele's rule", "Due date"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=13,
    tags=("obstetrics", "pregnancy", "dating"),
    inputs=(LMP, CYCLE),
    compute=_due_date,
    output=Output("date", None, None, "Estimated due date"),
    reference=Reference(
        purpose="Estimated date of delivery from the last menstrual period.",
        when_to_use="Pregnancy dating when the LMP is known; first-trimester ultrasound supersedes it when they disagree.",
        formula="EDD = LMP + 280 days + (cycle length − 28) days (Naegele's rule with cycle-length adjustment: later "
        "for longer cycles, earlier for shorter ones).",
        citation=f"Naegele FC. Lehrbuch der Geburtshülfe. Heidelberg; 1812. {_ACOG}",
        notes="MedCalc-Bench v1.0 labels added the absolute cycle difference (a 24-day cycle moved the date later); "
        "the maintained implementation and this calculator subtract for short cycles.",
    ),
    examples=(
        Example({"lmp": "2019-07-14", "cycle_length": 32}, dt.date(2020, 4, 23),
                "Hand-computed per Naegele: 07/14/2019 + 280 d = 04/19/2020; 32-day cycle → +4 d"),
        Example({"lmp": "2023-01-01"}, dt.date(2023, 10, 8), "Hand-computed per Naegele: 01/01/2023 + 280 d"),
    ),
)


def _conception(v):
    lmp = v["lmp"]
    return lmp + dt.timedelta(days=14), {"ovulation_adjusted": lmp + dt.timedelta(days=v["cycle_length"] - 14)}


CONCEPTION = Calculator(
    id="estimated_conception_date",
    name="Estimated Date of Conception",
    aliases=("Estimated of Conception", "Date of conception", "Conception date"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=68,
    tags=("obstetrics", "pregnancy", "dating"),
    inputs=(LMP, CYCLE),
    compute=_conception,
    output=Output("date", None, None, "Estimated date of conception"),
    reference=Reference(
        purpose="Estimated date of conception from the last menstrual period.",
        when_to_use="Pregnancy dating; conceptional (embryonic) age is gestational age minus 2 weeks.",
        formula="Conception ≈ LMP + 14 days (the obstetric convention: gestational age = conceptional age + 2 weeks).",
        citation=_ACOG,
        notes="The convention ignores cycle length. Physiologically ovulation is about 14 days before the next menses, "
        "so for irregular cycles LMP + (cycle length − 14) days is also given in the details as 'ovulation_adjusted'.",
    ),
    examples=(
        Example({"lmp": "05/06/2024", "cycle_length": 30}, dt.date(2024, 5, 20), "Hand-computed: 05/06/2024 + 14 d"),
    ),
)

CURRENT_DATE = Input("current_date", "Current date", type="date", aliases=("Current Date", "today", "date of assessment"))
DUE_DATE_INPUT = Input("due_date", "Estimated due date", type="date", optional=True,
                       aliases=("due_date", "EDD", "Due date", "estimated due date"),
                       help="used when the LMP is not given: GA = 280 days − (due date − current date)")
LMP_OPTIONAL = replace(LMP, optional=True, help="give this or the due date")


def _gestational_age(v):
    if v["lmp"] is not None:
        days = (v["current_date"] - v["lmp"]).days
        basis = "lmp"
    elif v["due_date"] is not None:
        days = 280 - (v["due_date"] - v["current_date"]).days
        basis = "due_date"
    else:
        raise CalculatorInputError("gestational_age", "lmp", "missing: give the last menstrual period or the due date")
    if days < 0:
        raise CalculatorInputError("gestational_age", "current_date", f"is {-days} days before the start of pregnancy")
    return (days // 7, days % 7), {"days": days, "basis": basis}


GESTATIONAL_AGE = Calculator(
    id="gestational_age",
    name="Estimated Gestational Age",
    aliases=("Gestational Age", "GA", "Gestational age calculator"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=69,
    tags=("obstetrics", "pregnancy", "dating"),
    inputs=(CURRENT_DATE, LMP_OPTIONAL, DUE_DATE_INPUT),
    compute=_gestational_age,
    output=Output("integer", "(weeks, days)", None, "Gestational age"),
    reference=Reference(
        purpose="Gestational age in completed weeks and days.",
        when_to_use="Any pregnancy dating from the LMP, or from an established due date.",
        formula="GA (days) = current date − LMP; or 280 − (EDD − current date). Reported as (weeks, days) = (days ÷ 7, days mod 7).",
        citation=_ACOG,
        notes="If both LMP and due date are given, the LMP is used.",
    ),
    examples=(
        Example({"current_date": "02/10/2025", "lmp": "07/02/2024"}, (31, 6), "Hand-computed: 223 days = 31 w 6 d"),
        Example({"current_date": "2024-01-01", "due_date": "2024-03-11"}, (30, 0),
                "Hand-computed: 280 − 70 days = 210 days = 30 w 0 d"),
    ),
)

CALCULATORS = [DUE_DATE, CONCEPTION, GESTATIONAL_AGE]
