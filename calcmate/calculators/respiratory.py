"""Respiratory and ventilator calculators: oxygenation indices, ARDS, lung mechanics, weaning.

The blood-gas inputs declared here (pH, PaO₂, PaCO₂, FiO₂, SpO₂) are shared with the acid-base
and sepsis modules. FiO₂ and SpO₂ are accepted as a percentage (40, "40 %") or as a fraction
(0.40); :func:`fraction` tells the two apart and rejects the impossible range in between.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calcmate.calculators._common import AGE, HEIGHT, RESP_RATE, SEX, flag
from calcmate.calculators.spec import (
    Band,
    Calculator,
    CalculatorInputError,
    Choice,
    Example,
    Input,
    Output,
    Reference,
    points,
)
from calcmate.domains import Domain

# -- shared blood-gas and ventilator inputs ------------------------------------------------------
PH = Input("ph", "Arterial pH", min=6.5, max=8.0, aliases=("pH", "arterial pH", "Arterial pH"))
PACO2 = Input("paco2", "PaCO₂", unit="mmHg", min=5, max=200,
              aliases=("PaCO₂", "PₐCO₂", "PaCO2", "pCO2", "arterial CO2"))
PAO2 = Input("pao2", "PaO₂", unit="mmHg", min=10, max=700,
             aliases=("PaO₂", "PaO2", "PₐO₂", "pO2", "Partial pressure of oxygen (PaO₂)"))
FIO2 = Input(
    "fio2", "FiO₂", unit="percent", min=0.21, max=100, aliases=("FiO₂", "FiO2", "fraction of inspired oxygen"),
    help="As a percentage (21-100) or a fraction (0.21-1.0).",
)
SPO2 = Input(
    "spo2", "SpO₂", unit="percent", min=0.5, max=100,
    aliases=("SpO₂", "SpO2", "O₂ saturation percentage", "oxygen saturation", "O2 sat"),
    help="As a percentage (e.g. 95) or a fraction (0.95).",
)
PEEP = Input("peep", "PEEP", unit="cmH2O", min=0, max=40, aliases=("PEEP", "positive end-expiratory pressure"))
PPLAT = Input("pplat", "Plateau pressure", unit="cmH2O", min=1, max=80,
              aliases=("Plateau pressure (Pplat)", "Pplat", "plateau pressure"))


def fraction(calc_id: str, key: str, v: float) -> float:
    """A percentage or fraction as a fraction: 40 -> 0.40, 0.40 -> 0.40. Values in (1, 21) are neither."""
    if v <= 1:
        return v
    if key == "fio2" and v < 21:
        raise CalculatorInputError(calc_id, key, f"{v:g} is neither a fraction (≤1) nor a percentage (21-100)")
    return v / 100.0


def _pf(v: dict[str, Any], calc_id: str) -> float:
    return v["pao2"] / fraction(calc_id, "fio2", v["fio2"])


# -- SpO2/FiO2 ---------------------------------------------------------------------------------
def _sf_ratio(v):
    return v["spo2"] * (100 if v["spo2"] <= 1 else 1) / fraction("sf_ratio", "fio2", v["fio2"])


SF_RATIO = Calculator(
    id="sf_ratio",
    name="SpO₂/FiO₂ Ratio",
    aliases=("SpO₂/FiO₂ Ratio", "S/F ratio", "SpO2 to FiO2 ratio"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "oxygenation", "ARDS", "ICU"),
    produces=("sf_ratio",),
    inputs=(SPO2, FIO2),
    compute=_sf_ratio,
    output=Output("decimal", None, 1, "S/F ratio"),
    bands=(
        Band("S/F ≤ 235: corresponds to P/F ≤ 200", None, 235.05),
        Band("S/F 235-315: corresponds to P/F 200-300", 235.05, 315.05),
        Band("S/F > 315: corresponds to P/F > 300", 315.05, None),
    ),
    reference=Reference(
        purpose="Non-invasive surrogate of the PaO₂/FiO₂ ratio from pulse oximetry.",
        when_to_use="Hypoxaemic patients without an arterial blood gas; valid when SpO₂ ≤ 97% "
        "(on the flat part of the oxyhaemoglobin curve the ratio loses meaning).",
        formula="S/F = SpO₂ (%) / FiO₂ (fraction). Rice et al.: S/F = 64 + 0.84 × (P/F); "
        "S/F 235 ≈ P/F 200 and S/F 315 ≈ P/F 300.",
        citation="Rice TW, Wheeler AP, Bernard GR, Hayden DL, Schoenfeld DA, Ware LB. Comparison of the SpO2/FIO2 "
        "ratio and the PaO2/FIO2 ratio in patients with acute lung injury or ARDS. Chest. 2007;132(2):410-417.",
        notes="FiO₂ may be given as a percentage or a fraction; SpO₂ > 97% overestimates oxygenation.",
    ),
    examples=(
        Example({"spo2": 92, "fio2": 45}, 204.4,
                "Hand-computed per Rice 2007 (S/F = SpO₂ % / FiO₂ fraction): 92 / 0.45 = 204.4, below the 235 cut-off "
                "(≈ P/F 167 by Rice's S/F = 64 + 0.84 × P/F)", 0.05),
        Example({"spo2": 88, "fio2": 0.5}, 176.0, "Hand-computed from Rice 2007 formula: 88 / 0.50", 0.05),
    ),
)

# -- PaO2/FiO2 (Horowitz) -------------------------------------------------------------------------
PF_BANDS = (
    Band("Severe ARDS range (P/F ≤ 100); Berlin mortality 45%", None, 100.05),
    Band("Moderate ARDS range (100 < P/F ≤ 200); Berlin mortality 32%", 100.05, 200.05),
    Band("Mild ARDS range (200 < P/F ≤ 300); Berlin mortality 27%", 200.05, 300.05),
    Band("Normal/not ARDS range (P/F > 300)", 300.05, None),
)

PF_RATIO = Calculator(
    id="pf_ratio",
    name="Horowitz Index for Lung Function (P/F Ratio)",
    aliases=("Horowitz Index for Lung Function (P/F Ratio)", "P/F ratio", "PaO2/FiO2 ratio", "Horowitz index",
             "Carrico index"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "oxygenation", "ARDS", "ICU"),
    produces=("pf_ratio",),
    inputs=(PAO2, FIO2),
    compute=lambda v: _pf(v, "pf_ratio"),
    output=Output("decimal", "mmHg", 1, "PaO₂/FiO₂"),
    bands=PF_BANDS,
    reference=Reference(
        purpose="Quantifies oxygenation impairment; grades ARDS severity under the Berlin definition.",
        when_to_use="Any patient with an arterial blood gas on known FiO₂; for ARDS grading, measured on PEEP/CPAP ≥ 5.",
        formula="P/F = PaO₂ (mmHg) / FiO₂ (fraction). Berlin severity: mild 200 < P/F ≤ 300; moderate 100 < P/F ≤ 200; "
        "severe P/F ≤ 100.",
        citation="Horovitz JH, Carrico CJ, Shires GT. Pulmonary response to major injury. Arch Surg. 1974;108(3):349-355; "
        "ARDS Definition Task Force. Acute respiratory distress syndrome: the Berlin Definition. JAMA. 2012;307(23):2526-2533.",
        notes="Band edges are inclusive at the upper bound as in the Berlin definition (P/F 300.0 is mild). "
        "Mortality figures are the Berlin validation cohort's.",
    ),
    examples=(
        Example({"pao2": 78, "fio2": 45}, 173.3,
                "Hand-computed per the Horovitz 1974 definition (PaO₂ / FiO₂ fraction): 78 / 0.45 = 173.3, the "
                "Berlin 2012 moderate range", 0.05),
        Example({"pao2": 60, "fio2": 1.0}, 60.0, "Hand-computed: 60 / 1.0", 0.05),
    ),
)

# -- Berlin ARDS -----------------------------------------------------------------------------------
def _berlin(v):
    if v["pf_ratio"] is not None:
        pf = v["pf_ratio"]
    elif v["pao2"] is not None and v["fio2"] is not None:
        pf = _pf(v, "berlin_ards")
    else:
        raise CalculatorInputError("berlin_ards", "pf_ratio", "give either pf_ratio or both pao2 and fio2")
    criteria = {k: v[k] for k in ("timing", "bilateral_opacities", "not_cardiac", "peep_5")}
    details = {"pf_ratio": round(pf, 1), **criteria}
    if not all(criteria.values()) or pf > 300:
        return "Does not meet Berlin ARDS criteria", details
    sev = "Severe" if pf <= 100 else "Moderate" if pf <= 200 else "Mild"
    return f"{sev} ARDS", details


BERLIN = Calculator(
    id="berlin_ards",
    name="Berlin Criteria for Acute Respiratory Distress Syndrome",
    aliases=("Berlin Criteria for Acute Respiratory Distress Syndrome", "Berlin Definition of ARDS", "Berlin ARDS criteria"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "ARDS", "ICU", "diagnosis"),
    inputs=(
        flag("timing", "Within 1 week of a known clinical insult or new/worsening respiratory symptoms", "Timing"),
        flag("bilateral_opacities", "Bilateral opacities on chest imaging not fully explained by effusions, "
             "lobar/lung collapse or nodules", "Chest imaging", "Bilateral opacities"),
        flag("not_cardiac", "Respiratory failure not fully explained by cardiac failure or fluid overload",
             "Origin of edema"),
        flag("peep_5", "On PEEP or CPAP ≥ 5 cm H₂O", "PEEP or CPAP ≥5 cm H₂O", "PEEP ≥5"),
        Input("pf_ratio", "PaO₂/FiO₂ ratio", unit="mmHg", min=10, max=700, optional=True,
              aliases=("P/F ratio", "PaO₂/FiO₂", "Oxygenation"), help="Give this or PaO₂ and FiO₂."),
        replace(PAO2, optional=True, help="Used if pf_ratio is not given."),
        replace(FIO2, optional=True, help="Used if pf_ratio is not given; % or fraction."),
    ),
    compute=_berlin,
    output=Output("category", None, None, "ARDS severity"),
    bands=(
        Band("Mild ARDS: mortality 27% (95% CI 24-30%)", match="Mild ARDS"),
        Band("Moderate ARDS: mortality 32% (95% CI 29-34%)", match="Moderate ARDS"),
        Band("Severe ARDS: mortality 45% (95% CI 42-48%)", match="Severe ARDS"),
        Band("ARDS criteria not met", match="Does not meet Berlin ARDS criteria"),
    ),
    reference=Reference(
        purpose="Diagnoses acute respiratory distress syndrome and grades its severity.",
        when_to_use="Adults with acute hypoxaemic respiratory failure and bilateral infiltrates.",
        formula="All four required: (1) timing within 1 week; (2) bilateral opacities; (3) oedema not fully explained by "
        "cardiac failure/fluid overload; (4) PaO₂/FiO₂ ≤ 300 on PEEP/CPAP ≥ 5 cm H₂O. Severity: mild 200 < P/F ≤ 300 "
        "(CPAP allowed), moderate 100 < P/F ≤ 200, severe P/F ≤ 100.",
        citation="ARDS Definition Task Force; Ranieri VM, Rubenfeld GD, Thompson BT, et al. Acute respiratory distress "
        "syndrome: the Berlin Definition. JAMA. 2012;307(23):2526-2533.",
        notes="Either a P/F ratio or PaO₂ and FiO₂ must be given. Without a risk factor, the definition also asks for an "
        "objective assessment (e.g. echocardiography) to exclude hydrostatic oedema; that is part of criterion (3).",
    ),
    examples=(
        Example({"timing": True, "bilateral_opacities": True, "not_cardiac": True, "peep_5": True, "pao2": 80, "fio2": 0.6},
                "Moderate ARDS", "Berlin 2012 severity table: P/F 133 on PEEP ≥5 is moderate"),
        Example({"timing": True, "bilateral_opacities": True, "not_cardiac": True, "peep_5": True, "pf_ratio": 250},
                "Mild ARDS", "Berlin 2012 severity table: 200 < P/F ≤ 300 is mild"),
        Example({"timing": True, "bilateral_opacities": False, "not_cardiac": True, "peep_5": True, "pf_ratio": 90},
                "Does not meet Berlin ARDS criteria", "Berlin 2012: bilateral opacities are required"),
    ),
)

# -- A-a gradient ----------------------------------------------------------------------------------
def _aa(v):
    f = fraction("aa_gradient", "fio2", v["fio2"])
    pAo2 = f * (v["patm"] - 47.0) - v["paco2"] / 0.8
    details = {"PAO2": round(pAo2, 1)}
    if v["age"] is not None:
        details["expected_aa_gradient"] = round(v["age"] / 4 + 4, 1)
    return pAo2 - v["pao2"], details


AA_GRADIENT = Calculator(
    id="aa_gradient",
    name="A-a O₂ Gradient",
    aliases=("A-a O₂ Gradient", "Alveolar-arterial gradient", "A-a gradient", "Alveolar-arterial oxygen gradient"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "oxygenation", "hypoxaemia"),
    produces=("aa_gradient",),
    inputs=(
        Input("patm", "Atmospheric pressure", unit="mmHg", min=200, max=800, optional=True, default=760.0,
              aliases=("Atmospheric pressure", "barometric pressure"), help="Default 760 mmHg (sea level)."),
        PAO2, FIO2, PACO2,
        replace(AGE, optional=True, aliases=(*AGE.aliases, "Age (for expected A-a gradient)"),
                help="Optional; only for the age-expected gradient in details."),
    ),
    compute=_aa,
    output=Output("decimal", "mmHg", 1, "A-a gradient"),
    reference=Reference(
        purpose="Separates hypoxaemia from V/Q mismatch, shunt or diffusion limitation (raised gradient) from "
        "hypoventilation or low inspired O₂ (normal gradient).",
        when_to_use="Hypoxaemic patients with an arterial blood gas on known FiO₂.",
        formula="PAO₂ = FiO₂ × (Patm − PH₂O 47) − PaCO₂ / 0.8; A-a gradient = PAO₂ − PaO₂. "
        "Expected gradient on room air ≈ age/4 + 4.",
        interpretation="A gradient above the age-expected value suggests V/Q mismatch, shunt or diffusion impairment; "
        "the normal range widens with higher FiO₂.",
        citation="West JB. Respiratory Physiology: The Essentials (alveolar gas equation, R = 0.8); Mellemgaard K. The "
        "alveolar-arterial oxygen difference: its size and components in normal man. Acta Physiol Scand. 1966;67(1):10-20.",
        notes="Defaults re-checked against the alveolar gas equation as West gives it: atmospheric pressure 760 mmHg "
        "is sea level (the default; give the local barometric pressure at altitude, e.g. about 630 mmHg at 1,600 m); "
        "water vapour pressure 47 mmHg at 37 °C; respiratory quotient R = 0.8, the conventional resting value on a "
        "mixed diet (it ranges about 0.7 on fat to 1.0 on carbohydrate). This is the simplified equation; West's full "
        "form adds FiO₂ × PaCO₂ × (1 − R)/R, about 2 mmHg on room air at PaCO₂ 40 and 0 at FiO₂ 1.0, which the "
        "bedside convention omits (the MedMCP-Calc dev answer is reproduced only without it). The age-expected value (age/4 + 4) is a bedside rule for room air; "
        "Mellemgaard 1966 measured about 2.5 + 0.21 × age in healthy seated subjects.",
    ),
    examples=(
        Example({"patm": 630, "pao2": 68, "fio2": 21, "paco2": 34, "age": 40}, 11.9,
                "Hand-computed per the alveolar gas equation (West; PH₂O 47, R 0.8) at altitude (Patm 630 mmHg, about "
                "1,600 m): PAO₂ = 0.21 × (630 − 47) − 34/0.8 = 79.9; A-a = 79.9 − 68 = 11.9, within the "
                "age-expected 40/4 + 4 = 14", 0.05),
        Example({"pao2": 90, "fio2": 21, "paco2": 40}, 9.7,
                "Hand-computed with the alveolar gas equation on room air: 0.21×713 − 50 − 90", 0.05),
    ),
)

# -- ETT depth and tidal volume --------------------------------------------------------------------
def ibw(sex: str, height_cm: float) -> float:
    """Devine ideal body weight (kg): 50 (male) / 45.5 (female) + 2.3 kg per inch over 5 ft."""
    return (50.0 if sex == "male" else 45.5) + 2.3 * (height_cm / 2.54 - 60)


def _ett(v):
    depth = v["height"] / 10 + 4
    w = ibw(v["sex"], v["height"])
    return depth, {
        "ibw_kg": round(w, 1),
        "tidal_volume_6_ml_kg": round(6 * w),
        "tidal_volume_8_ml_kg": round(8 * w),
    }


ETT = Calculator(
    id="ett_depth_tidal_volume",
    name="Endotracheal Tube (ETT) Depth and Tidal Volume Calculator",
    aliases=("Endotracheal Tube (ETT) Depth and Tidal Volume Calculator", "ETT depth", "Chula formula"),
    domain=Domain.CRITICAL_CARE,
    tags=("airway", "ventilation", "anesthesia", "ICU"),
    produces=("ibw",),
    inputs=(
        HEIGHT,
        SEX,
    ),
    compute=_ett,
    output=Output("decimal", "cm", 0, "ETT depth at the front teeth"),
    reference=Reference(
        purpose="Estimates oral endotracheal tube insertion depth (at the upper incisors) and lung-protective tidal "
        "volumes from height.",
        when_to_use="Adults being orally intubated and started on mechanical ventilation.",
        formula="Depth (cm, at front teeth) = height (cm) / 10 + 4 (Chula formula). IBW (Devine) = 50 kg (male) or "
        "45.5 kg (female) + 2.3 kg × (height in inches − 60); tidal volume 6-8 mL/kg IBW (ARDSNet).",
        citation="Techanivate A, Kumwilaisak K, Samranrean S. Estimation of the proper length of orotracheal intubation "
        "by Chula formula. J Med Assoc Thai. 2005;88(12):1838-1846; ARDS Network. Ventilation with lower tidal volumes "
        "as compared with traditional tidal volumes for acute lung injury and ARDS. N Engl J Med. 2000;342(18):1301-1308.",
        notes="Depth is rounded to whole centimetres (tube markings); details carry IBW and 6 and 8 mL/kg tidal "
        "volumes. Confirm position clinically and radiographically.",
    ),
    examples=(
        Example({"height": 177.8, "sex": "male"}, 22.0, "Hand-computed with the Chula formula: 177.8/10 + 4 = 21.8 → 22"),
        Example({"height": 160, "sex": "female"}, 20.0, "Hand-computed with the Chula formula: 160/10 + 4 = 20"),
    ),
)

# -- Static compliance -----------------------------------------------------------------------------
def _cstat(v):
    dp = v["pplat"] - v["peep"]
    if dp <= 0:
        raise CalculatorInputError("static_compliance", "pplat", "plateau pressure must exceed PEEP")
    return v["tidal_volume"] / dp, {"driving_pressure": dp}


CSTAT = Calculator(
    id="static_compliance",
    name="Static Lung Compliance (Cstat) Calculation",
    aliases=("Static Lung Compliance (Cstat) Calculation", "Static compliance", "Cstat",
             "Static respiratory system compliance"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "ventilation", "lung mechanics", "ARDS"),
    produces=("compliance", "driving_pressure"),
    inputs=(
        Input("tidal_volume", "Tidal volume", unit="mL", min=20, max=3000,
              aliases=("Corrected/delivered tidal volume (ΔV)", "Tidal volume", "VT")),
        PPLAT, PEEP,
    ),
    compute=_cstat,
    output=Output("decimal", "mL/cmH2O", 1, "Static compliance"),
    bands=(
        Band("Low static compliance (normal 50-100 mL/cm H₂O)", None, 50),
        Band("Normal static compliance (50-100 mL/cm H₂O)", 50, 100.05),
        Band("Above the usual range (>100 mL/cm H₂O)", 100.05, None),
    ),
    reference=Reference(
        purpose="Measures respiratory-system compliance during an inspiratory hold on the ventilator.",
        when_to_use="Mechanically ventilated, passive patients with a measured plateau pressure.",
        formula="Cstat = tidal volume (mL) / (plateau pressure − PEEP) (cm H₂O). Driving pressure = Pplat − PEEP.",
        citation="Suter PM, Fairley B, Isenberg MD. Optimum end-expiratory airway pressure in patients with acute "
        "pulmonary failure. N Engl J Med. 1975;292(6):284-289.",
        notes="Use the total PEEP (set + intrinsic) if auto-PEEP is present. Normal 50-100 mL/cm H₂O.",
    ),
    examples=(
        Example({"tidal_volume": 390, "pplat": 27, "peep": 10}, 22.9,
                "Hand-computed per the static-compliance definition (Suter 1975): 390 / (27 − 10) = 22.9 mL/cm H₂O",
                0.05),
        Example({"tidal_volume": 500, "pplat": 15, "peep": 5}, 50.0, "Hand-computed: 500/(15−5)", 0.05),
    ),
)

# -- Recruitment-to-inflation ratio ----------------------------------------------------------------
def _ri(v):
    p_low = max(v["peep_low"], v["aop"])
    dpeep = v["peep_high"] - p_low
    if dpeep <= 0:
        raise CalculatorInputError("recruitment_inflation_ratio", "peep_high",
                                   "high PEEP must exceed low PEEP and the airway opening pressure")
    if v["pplat_low"] <= p_low:
        raise CalculatorInputError("recruitment_inflation_ratio", "pplat_low",
                                   "plateau pressure at low PEEP must exceed low PEEP / airway opening pressure")
    crs = v["vt_set"] / (v["pplat_low"] - p_low)
    delta_eelv = v["vt_release"] - v["vt_high"]
    predicted = crs * dpeep
    vrec = delta_eelv - predicted
    ri_raw = (vrec / dpeep) / crs
    details = {
        "crs_low_peep": round(crs, 1), "delta_eelv_ml": round(delta_eelv, 1),
        "predicted_delta_eelv_ml": round(predicted, 1), "recruited_volume_ml": round(vrec, 1),
        "crec": round(vrec / dpeep, 1), "ri_unclamped": round(ri_raw, 2),
    }
    if delta_eelv < 0:
        details["warning"] = ("exhaled volume on PEEP release is smaller than the tidal volume at high PEEP; "
                              "check the measurements")
    return max(0.0, ri_raw), details


RI_RATIO = Calculator(
    id="recruitment_inflation_ratio",
    name="Recruitment to Inflation Ratio",
    aliases=("Recruitment to Inflation Ratio", "R/I ratio", "Recruitment-to-inflation ratio"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "ARDS", "ventilation", "PEEP titration"),
    inputs=(
        Input("aop", "Airway opening pressure", unit="cmH2O", min=0, max=40, optional=True, default=0.0,
              aliases=("Airway Opening Pressure", "AOP"), help="Default 0 (no airway closure)."),
        Input("peep_high", "High PEEP", unit="cmH2O", min=1, max=40, aliases=("High PEEP",)),
        Input("vt_set", "Set tidal volume", unit="mL", min=20, max=3000, aliases=("Set Tidal Volume (VT)", "VT")),
        Input("vt_high", "Exhaled tidal volume at high PEEP", unit="mL", min=20, max=3000,
              aliases=("VT exhaled @ high PEEP",)),
        Input("peep_low", "Low PEEP", unit="cmH2O", min=0, max=40, aliases=("Low PEEP",)),
        Input("vt_release", "Exhaled volume on release from high to low PEEP", unit="mL", min=0, max=5000,
              aliases=("VT exhaled from high to low PEEP",)),
        Input("pplat_low", "Plateau pressure at low PEEP", unit="cmH2O", min=1, max=80,
              aliases=("Plateau Pressure (at low PEEP)",)),
    ),
    compute=_ri,
    output=Output("decimal", None, 2, "R/I ratio"),
    bands=(
        Band("Low recruiter (R/I < 0.5)", None, 0.5),
        Band("High recruiter (R/I ≥ 0.5)", 0.5, None),
    ),
    reference=Reference(
        purpose="Estimates lung recruitability in ARDS with a single-breath PEEP derecruitment manoeuvre.",
        when_to_use="Passive, volume-controlled ventilated ARDS patients, to judge whether higher PEEP is likely to recruit.",
        formula="P_low = max(low PEEP, airway opening pressure). Crs_low = VT_set / (Pplat_low − P_low). "
        "ΔEELV = exhaled volume on release − VT exhaled at high PEEP. Vrec = ΔEELV − Crs_low × (PEEP_high − P_low). "
        "Crec = Vrec / (PEEP_high − P_low). R/I = Crec / Crs_low.",
        interpretation="R/I ≥ 0.5 suggests higher potential for recruitment (high recruiter).",
        citation="Chen L, Del Sorbo L, Grieco DL, et al. Potential for lung recruitment estimated by the "
        "recruitment-to-inflation ratio in acute respiratory distress syndrome. A clinical trial. "
        "Am J Respir Crit Care Med. 2020;201(2):178-187.",
        notes="A negative recruited volume has no physical meaning (it arises when the release volume is smaller than "
        "predicted, e.g. inconsistent measurements); the ratio is then reported as 0 (no recruitment) and the raw value "
        "is kept in details. MedMCP-Calc's dev answer for a release volume smaller than the high-PEEP tidal volume is 0, consistent with this.",
    ),
    examples=(
        Example({"aop": 0, "peep_high": 15, "vt_set": 400, "vt_high": 400, "peep_low": 5, "vt_release": 900,
                 "pplat_low": 25}, 1.5,
                "Hand-computed with Chen 2020 method: Crs 20, ΔEELV 500, Vrec 300, Crec 30, R/I 1.5", 0.005),
        Example({"aop": 8, "peep_high": 15, "vt_set": 420, "vt_high": 420, "peep_low": 5, "vt_release": 620,
                 "pplat_low": 29}, 0.43,
                "Hand-computed with Chen 2020 method using AOP 8 > low PEEP: Crs 20, ΔEELV 200, predicted 140, "
                "Vrec 60, Crec 8.57, R/I 0.43", 0.005),
    ),
)

# -- ROX index -------------------------------------------------------------------------------------
def _rox(v):
    sf = v["spo2"] * (100 if v["spo2"] <= 1 else 1) / fraction("rox_index", "fio2", v["fio2"])
    return sf / v["resp_rate"], {"sf_ratio": round(sf, 1)}


RR_POS = replace(RESP_RATE, min=1)

ROX = Calculator(
    id="rox_index",
    name="ROX Index for Intubation after HFNC",
    aliases=("ROX Index for Intubation after HFNC", "ROX index", "Respiratory rate-oxygenation index"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "HFNC", "intubation", "ICU"),
    inputs=(SPO2, FIO2, RR_POS),
    compute=_rox,
    output=Output("decimal", None, 2, "ROX index"),
    bands=(
        Band("High risk of progressing to intubation (ROX < 3.85)", None, 3.85),
        Band("Indeterminate: reassess in 1-2 hours (3.85 ≤ ROX < 4.88)", 3.85, 4.88),
        Band("Low risk of progressing to intubation (ROX ≥ 4.88)", 4.88, None),
    ),
    reference=Reference(
        purpose="Predicts high-flow nasal cannula failure (need for intubation) in acute hypoxaemic respiratory failure.",
        when_to_use="Patients with pneumonia-related hypoxaemic respiratory failure on HFNC, at 2, 6 and 12 h.",
        formula="ROX = (SpO₂ / FiO₂) / respiratory rate, with SpO₂ in % and FiO₂ as a fraction.",
        interpretation="ROX ≥ 4.88 at 2, 6 or 12 h: low risk of intubation; < 3.85: high risk (Roca 2019 thresholds "
        "< 2.85, < 3.47, < 3.85 at 2, 6, 12 h).",
        citation="Roca O, Caralt B, Messika J, et al. An index combining respiratory rate and oxygenation to predict "
        "outcome of nasal high-flow therapy. Am J Respir Crit Care Med. 2019;199(11):1368-1376.",
        notes="The high-risk cut-off depends on time on HFNC (2.85 at 2 h, 3.47 at 6 h, 3.85 at 12 h); the band shown "
        "uses the 12 h value.",
    ),
    examples=(
        Example({"spo2": 91, "fio2": 0.7, "resp_rate": 30}, 4.33,
                "Hand-computed per Roca 2019 (ROX = (SpO₂/FiO₂)/RR): (91 / 0.70) / 30 = 4.33, the indeterminate "
                "3.85-4.88 zone", 0.005),
        Example({"spo2": 90, "fio2": 0.6, "resp_rate": 35}, 4.29, "Hand-computed from Roca 2019: (90/0.60)/35", 0.005),
    ),
)

# -- RSBI ------------------------------------------------------------------------------------------
RSBI = Calculator(
    id="rsbi",
    name="Rapid Shallow Breathing Index (RSBI)",
    aliases=("Rapid Shallow Breathing Index (RSBI)", "Tobin index", "f/VT"),
    domain=Domain.CRITICAL_CARE,
    tags=("respiratory", "ventilation", "weaning", "extubation"),
    inputs=(
        RR_POS,
        Input("tidal_volume", "Tidal volume", unit="mL", min=20, max=3000, aliases=("Tidal volume", "VT"),
              help="Spontaneous tidal volume in mL (litres are converted)."),
    ),
    compute=lambda v: v["resp_rate"] / (v["tidal_volume"] / 1000.0),
    output=Output("integer", "breaths/min/L", None, "RSBI"),
    bands=(
        Band("Likely successful extubation (RSBI < 105)", None, 105),
        Band("Likely unsuccessful extubation (RSBI ≥ 105)", 105, None),
    ),
    reference=Reference(
        purpose="Predicts successful weaning from mechanical ventilation.",
        when_to_use="Ventilated patients during a spontaneous breathing trial (1 minute off support in the original study).",
        formula="RSBI = respiratory rate (breaths/min) / tidal volume (L).",
        citation="Yang KL, Tobin MJ. A prospective study of indexes predicting the outcome of trials of weaning from "
        "mechanical ventilation. N Engl J Med. 1991;324(21):1445-1450.",
        notes="Threshold 105 breaths/min/L (97% sensitive, 64% specific in the original study). Tidal volume is taken "
        "in mL (litres are converted).",
    ),
    examples=(
        Example({"resp_rate": 26, "tidal_volume": "310 mL"}, 84,
                "Hand-computed per Yang & Tobin 1991 (f/VT in breaths/min/L): 26 / 0.310 = 83.9, below 105"),
        Example({"resp_rate": 35, "tidal_volume": "0.25 L"}, 140, "Hand-computed: 35 / 0.25"),
    ),
)

# -- Pulmonary vascular resistance -----------------------------------------------------------------
def _pvr(v):
    pvr = (v["mpap"] - v["pcwp"]) / v["cardiac_output"]
    tpr = v["mpap"] / v["cardiac_output"]
    f = 80.0 if v["units"] == "dynes" else 1.0
    unit = "dyn·s·cm⁻⁵" if f == 80 else "Wood units"
    return pvr * f, {"unit": unit, "pvr": round(pvr * f, 2), "total_pulmonary_resistance": round(tpr * f, 2)}


PULM_RESISTANCE = Calculator(
    id="pulmonary_resistance",
    name="Pulmonary Resistance",
    aliases=("Pulmonary Resistance", "Pulmonary vascular resistance", "PVR"),
    domain=Domain.CRITICAL_CARE,
    tags=("cardiology", "pulmonary hypertension", "hemodynamics", "right heart catheterisation"),
    inputs=(
        Input("mpap", "Mean pulmonary artery pressure", unit="mmHg", min=1, max=120,
              aliases=("Mean Pulmonary Artery Pressure", "mPAP")),
        Input("pcwp", "Pulmonary capillary wedge pressure", unit="mmHg", min=0, max=60,
              aliases=("Pulmonary Capillary Wedge Pressure", "PCWP", "PAWP")),
        Input("cardiac_output", "Cardiac output", unit="L/min", min=0.5, max=25,
              aliases=("Pulmonary Flow (Cardiac Output)", "cardiac output", "CO")),
        Input("units", "Output units", type="choice", optional=True, default="wood",
              choices=(Choice("Wood units", "wood", ("WU", "mmHg·min/L")),
                       Choice("dyn·s·cm⁻⁵", "dynes", ("dynes", "dynes·sec·cm⁻⁵", "dyn s cm-5"))),
              aliases=("Units",), help="Default Wood units; dyn·s·cm⁻⁵ = Wood units × 80."),
    ),
    compute=_pvr,
    output=Output("decimal", None, 2, "Pulmonary vascular resistance (unit in details)"),
    reference=Reference(
        purpose="Pulmonary vascular resistance and total pulmonary resistance from right heart catheterisation.",
        when_to_use="Evaluation of pulmonary hypertension (pre- vs post-capillary) and before transplantation.",
        formula="PVR = (mPAP − PCWP) / CO; total pulmonary resistance = mPAP / CO (Wood units = mmHg·min/L; "
        "× 80 for dyn·s·cm⁻⁵).",
        interpretation="PVR > 2 WU supports pre-capillary pulmonary hypertension (2022 ESC/ERS); older definitions used ≥ 3 WU.",
        citation="Humbert M, Kovacs G, Hoeper MM, et al. 2022 ESC/ERS Guidelines for the diagnosis and treatment of "
        "pulmonary hypertension. Eur Heart J. 2022;43(38):3618-3731.",
        notes="Interpretation thresholds apply to Wood units.",
    ),
    examples=(
        Example({"mpap": 32, "pcwp": 11, "cardiac_output": 4.2, "units": "Wood units"}, 5.0,
                "Hand-computed per the 2022 ESC/ERS definition PVR = (mPAP − PAWP)/CO: (32 − 11)/4.2 = 5.0 WU, "
                "pre-capillary (> 2 WU)", 0.005),
        Example({"mpap": 40, "pcwp": 10, "cardiac_output": 5.0, "units": "dynes"}, 480.0,
                "Hand-computed: (40−10)/5 = 6 WU × 80", 0.005),
    ),
)

# -- SMART-COP -------------------------------------------------------------------------------------
_SMART_COP = {"low_sbp": 2, "multilobar": 1, "low_albumin": 1, "high_rr": 1, "tachycardia": 1,
              "confusion": 1, "low_oxygen": 2, "low_ph": 2}

SMART_COP = Calculator(
    id="smart_cop",
    name="SMART-COP Score for Pneumonia Severity",
    aliases=("SMART-COP Score for Pneumonia Severity", "SMART-COP", "SMARTCOP"),
    domain=Domain.MEDICINE,
    tags=("respiratory", "pneumonia", "ICU triage", "infection"),
    inputs=(
        flag("low_sbp", "Systolic BP < 90 mmHg", "Systolic BP <90 mmHg"),
        flag("multilobar", "Multilobar chest X-ray involvement", "Multilobar CXR involvement"),
        flag("low_albumin", "Albumin < 3.5 g/dL", "Albumin <3.5 g/dL"),
        flag("high_rr", "Respiratory rate high for age (≥ 25 if age ≤ 50; ≥ 30 if age > 50)", "Respiratory rate"),
        flag("tachycardia", "Heart rate ≥ 125 bpm", "Heart rate ≥125"),
        flag("confusion", "Confusion (new onset)", "Confusion"),
        flag("low_oxygen", "Poor oxygenation for age (age ≤ 50: PaO₂ < 70, SpO₂ ≤ 93% or P/F < 333; "
             "age > 50: PaO₂ < 60, SpO₂ ≤ 90% or P/F < 250)", "Oxygenation", "Low oxygenation"),
        flag("low_ph", "Arterial pH < 7.35", "Arterial pH <7.35"),
    ),
    compute=lambda v: points(v, _SMART_COP),
    output=Output("integer", "points", None, "SMART-COP"),
    bands=(
        Band("Low risk of needing intensive respiratory or vasopressor support (0-2)", 0, 3),
        Band("Moderate risk, 1 in 8 (3-4)", 3, 5),
        Band("High risk, 1 in 3 (5-6)", 5, 7),
        Band("Very high risk, 2 in 3 (≥7)", 7, None),
    ),
    reference=Reference(
        purpose="Predicts need for intensive respiratory or vasopressor support in community-acquired pneumonia.",
        when_to_use="Adults with community-acquired pneumonia, at presentation.",
        formula="S: SBP < 90 (2); M: multilobar CXR (1); A: albumin < 3.5 g/dL (1); R: RR ≥ 25 (age ≤ 50) or ≥ 30 "
        "(age > 50) (1); T: HR ≥ 125 (1); C: new confusion (1); O: age ≤ 50 PaO₂ < 70 / SpO₂ ≤ 93% / P/F < 333, "
        "age > 50 PaO₂ < 60 / SpO₂ ≤ 90% / P/F < 250 (2); P: arterial pH < 7.35 (2). Total 0-11.",
        interpretation="≥ 3 points identified 92% of patients who needed intensive respiratory or vasopressor support.",
        citation="Charles PG, Wolfe R, Whitby M, et al. SMART-COP: a tool for predicting the need for intensive "
        "respiratory or vasopressor support in community-acquired pneumonia. Clin Infect Dis. 2008;47(3):375-384.",
        notes="Age-adjusted criteria are given as yes/no; apply the thresholds for the patient's age.",
    ),
    examples=(
        Example({"low_sbp": True, "multilobar": True, "low_albumin": False, "high_rr": True, "tachycardia": False,
                 "confusion": False, "low_oxygen": True, "low_ph": False}, 6, "Charles 2008 points table: 2+1+1+2"),
        Example({k: False for k in _SMART_COP}, 0, "Charles 2008 points table: no criteria"),
    ),
)

CALCULATORS = [SF_RATIO, PF_RATIO, BERLIN, AA_GRADIENT, ETT, CSTAT, RI_RATIO, ROX, RSBI, PULM_RESISTANCE, SMART_COP]
