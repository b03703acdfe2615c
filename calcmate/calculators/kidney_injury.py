"""Acute kidney injury calculators: KDIGO staging, kinetic eGFR for changing creatinine, and the
fractional excretion of urea. Steady-state eGFR equations (CKD-EPI, MDRD, Cockcroft-Gault) live in
the renal module."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import BUN, CREATININE, WEIGHT, flag
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain

# -- KDIGO AKI staging -----------------------------------------------------------------------------
def _kdigo(v):
    base, cr = v["baseline_creatinine"], v["creatinine"]
    if (base is None) != (cr is None):
        missing = "baseline_creatinine" if base is None else "creatinine"
        raise CalculatorInputError("kdigo_aki", missing, "creatinine staging needs both baseline and current creatinine")
    if (v["uo_rate"] is None) != (v["uo_hours"] is None):
        missing = "uo_rate" if v["uo_rate"] is None else "uo_hours"
        raise CalculatorInputError("kdigo_aki", missing, "urine-output staging needs both the rate and its duration")
    if base is None and v["uo_rate"] is None and not v["rrt"] and not v["anuria_12h"]:
        raise CalculatorInputError("kdigo_aki", "creatinine", "give creatinine (baseline and current) or urine output")

    d: dict = {}
    scr_stage = 0
    if base is not None:
        ratio = cr / base
        d["creatinine_ratio"] = round(ratio, 2)
        d["creatinine_rise_mg_dl"] = round(cr - base, 2)
        stage1 = ratio >= 1.5 or v["rise_03_48h"]
        scr_stage = 3 if ratio >= 3.0 or (cr >= 4.0 and stage1) else 2 if ratio >= 2.0 else 1 if stage1 else 0
    if v["rrt"]:
        scr_stage = 3
    uo_stage = 0
    if v["uo_rate"] is not None:
        rate, hours = v["uo_rate"], v["uo_hours"]
        uo_stage = (3 if rate < 0.3 and hours >= 24 else
                    2 if rate < 0.5 and hours >= 12 else
                    1 if rate < 0.5 and hours >= 6 else 0)
    if v["anuria_12h"]:
        uo_stage = 3
    d.update(creatinine_stage=scr_stage, urine_output_stage=uo_stage)
    stage = max(scr_stage, uo_stage)
    return ("No AKI" if stage == 0 else f"Stage {stage}"), d


def _cr(key: str, label: str, *aliases: str, optional: bool = True, help: str = "", max: float | None = None) -> Input:
    return replace(CREATININE, key=key, label=label, aliases=aliases, optional=optional, help=help,
                   max=CREATININE.max if max is None else max)


KDIGO_AKI = Calculator(
    id="kdigo_aki",
    name="KDIGO AKI Staging",
    aliases=("KDIGO AKI Staging", "KDIGO acute kidney injury staging", "AKI staging (KDIGO)"),
    domain=Domain.MEDICINE,
    tags=("nephrology", "AKI", "ICU", "creatinine", "urine output"),
    inputs=(
        _cr("baseline_creatinine", "Baseline serum creatinine", "Baseline creatinine", "baseline SCr",
            help="Known or presumed baseline within the prior 7 days."),
        _cr("creatinine", "Current serum creatinine", "Current creatinine", "Creatinine", "serum creatinine"),
        flag("rise_03_48h", "Creatinine rise ≥ 0.3 mg/dL (26.5 µmol/L) within 48 hours",
             "Increase in SCr ≥0.3 mg/dL within 48 hours", optional=True,
             help="Default no; the registry cannot infer the 48-hour window from two values."),
        Input("uo_rate", "Urine output", unit="mL/kg/h", min=0, max=20, optional=True,
              aliases=("Urine output", "Urine Output", "urine output rate"),
              help="Sustained urine output rate over the duration below."),
        Input("uo_hours", "Duration of that urine output", unit="h", min=0, max=168, optional=True,
              aliases=("Duration", "hours of low urine output")),
        flag("anuria_12h", "Anuria for ≥ 12 hours", "Anuria ≥12 hours", optional=True, help="Default no."),
        flag("rrt", "Renal replacement therapy initiated", "Initiation of renal replacement therapy", "RRT",
             optional=True, help="Default no."),
    ),
    compute=_kdigo,
    output=Output("category", None, None, "KDIGO AKI stage"),
    bands=(
        Band("No AKI by KDIGO criteria", match="No AKI"),
        Band("Stage 1: SCr 1.5-1.9× baseline or ≥ 0.3 mg/dL rise in 48 h, or UO < 0.5 mL/kg/h for 6-12 h", match="Stage 1"),
        Band("Stage 2: SCr 2.0-2.9× baseline, or UO < 0.5 mL/kg/h for ≥ 12 h", match="Stage 2"),
        Band("Stage 3: SCr ≥ 3.0× baseline, SCr ≥ 4.0 mg/dL, RRT, UO < 0.3 mL/kg/h for ≥ 24 h or anuria ≥ 12 h",
             match="Stage 3"),
    ),
    reference=Reference(
        purpose="Diagnoses and stages acute kidney injury by creatinine and urine output.",
        when_to_use="Hospitalised patients with a rising creatinine or falling urine output.",
        formula="Stage 1: SCr 1.5-1.9× baseline (within 7 days) or rise ≥ 0.3 mg/dL within 48 h; or UO < 0.5 mL/kg/h for "
        "6-12 h. Stage 2: SCr 2.0-2.9× baseline; or UO < 0.5 mL/kg/h for ≥ 12 h. Stage 3: SCr ≥ 3.0× baseline, or SCr "
        "≥ 4.0 mg/dL (354 µmol/L) with an acute rise, or initiation of RRT; or UO < 0.3 mL/kg/h for ≥ 24 h, or anuria "
        "≥ 12 h. The higher of the creatinine and urine-output stages applies.",
        citation="Kidney Disease: Improving Global Outcomes (KDIGO) Acute Kidney Injury Work Group. KDIGO Clinical "
        "Practice Guideline for Acute Kidney Injury. Kidney Int Suppl. 2012;2(1):1-138.",
        notes="The ≥ 0.3 mg/dL-in-48-h criterion is an explicit yes/no input (two values do not say when they were "
        "drawn). SCr ≥ 4.0 counts as stage 3 only when a stage-1 creatinine criterion is also met. The paediatric "
        "criterion (eGFR < 35 mL/min/1.73 m² under 18 years) is not modelled.",
    ),
    examples=(
        Example({"baseline_creatinine": 1.0, "creatinine": 2.4}, "Stage 2", "KDIGO 2012 table 2: 2.4× baseline"),
        Example({"baseline_creatinine": 1.0, "creatinine": 1.2, "uo_rate": 0.2, "uo_hours": 26}, "Stage 3",
                "KDIGO 2012 table 2: UO < 0.3 mL/kg/h for ≥ 24 h"),
        Example({"baseline_creatinine": 0.9, "creatinine": 1.25, "rise_03_48h": True}, "Stage 1",
                "KDIGO 2012 table 2: rise ≥ 0.3 mg/dL in 48 h"),
        Example({"baseline_creatinine": 1.0, "creatinine": 1.1}, "No AKI", "KDIGO 2012 table 2: ratio 1.1"),
    ),
)

# -- Kinetic eGFR ----------------------------------------------------------------------------------
def _kegfr(v):
    c1, c2 = v["creatinine_1"], v["creatinine_2"]
    mean = (c1 + c2) / 2
    delta = c2 - c1
    factor = 1 - 24 * delta / (v["hours"] * v["max_increase_per_day"])
    kegfr = v["baseline_creatinine"] * v["baseline_egfr"] / mean * factor
    d = {"mean_creatinine": round(mean, 2), "delta_creatinine": round(delta, 2), "kinetic_factor": round(factor, 3)}
    if kegfr < 0:
        d["note"] = "creatinine rose faster than the assumed maximum; kinetic GFR is effectively 0"
    return max(kegfr, 0.0), d


KEGFR = Calculator(
    id="kinetic_egfr",
    name="Kinetic Estimated Glomerular Filtration Rate (keGFR)",
    aliases=("Kinetic Estimated Glomerular Filtration Rate (keGFR)", "keGFR", "Kinetic GFR", "Kinetic eGFR"),
    domain=Domain.MEDICINE,
    tags=("nephrology", "AKI", "creatinine", "drug dosing", "ICU"),
    produces=("gfr",),
    inputs=(
        _cr("baseline_creatinine", "Baseline (steady-state) creatinine", "Baseline creatinine",
            "Steady-state creatinine", optional=False),
        Input("baseline_egfr", "eGFR at the baseline creatinine (mL/min/1.73 m²)", min=1, max=200,
              aliases=("Baseline eGFR", "eGFR", "Baseline GFR"),
              help="Steady-state eGFR (e.g. CKD-EPI or MDRD) or creatinine clearance at the baseline creatinine."),
        _cr("creatinine_1", "First creatinine", "Initial creatinine", "Creatinine 1", optional=False),
        _cr("creatinine_2", "Second creatinine", "Second creatinine", "Creatinine 2", optional=False),
        Input("hours", "Time between creatinine measurements", unit="h", min=1, max=720,
              aliases=("Time between creatinines", "Δ time", "Time interval")),
        Input("max_increase_per_day", "Maximum creatinine rise per day if GFR were 0 (mg/dL/day)", min=0.1, max=5,
              optional=True, default=1.5, aliases=("Max Δ creatinine per day", "MaxΔPCr/Day"),
              help="Default 1.5 mg/dL/day (Chen 2013's typical adult value; higher with high muscle mass)."),
    ),
    compute=_kegfr,
    output=Output("decimal", "mL/min/1.73m²", 1, "Kinetic eGFR"),
    reference=Reference(
        purpose="Estimates GFR while serum creatinine is changing (AKI or recovery), when steady-state equations fail.",
        when_to_use="Acute kidney injury or recovery with two creatinine values a known time apart.",
        formula="KeGFR = (SSPCr × eGFR / MeanPCr) × (1 − 24 × ΔPCr / (Δt × MaxΔPCr/day)), where SSPCr is the baseline "
        "steady-state creatinine with its eGFR, MeanPCr the mean of the two creatinines, ΔPCr = second − first, Δt in "
        "hours and MaxΔPCr/day the daily creatinine rise expected with no GFR.",
        citation="Chen S. Retooling the creatinine clearance equation to estimate kinetic GFR when the plasma creatinine "
        "is changing acutely. J Am Soc Nephrol. 2013;24(6):877-888.",
        notes="MaxΔPCr/day (re-checked): Chen 2013 defines it as the rise in plasma creatinine per day that would "
        "occur if the GFR fell to zero, and treats it as patient-specific (it is creatinine production over its volume "
        "of distribution, so it grows with muscle mass and falls in wasting or critical illness). The default 1.5 "
        "mg/dL/day is the conventional adult value used with the equation (the classic teaching that creatinine rises "
        "about 1-1.5 mg/dL a day after total loss of filtration; open implementations citing Chen use 1.5 and quote a "
        "range of about 1.3-2.0); give the patient's own value when known, e.g. the observed daily rise while anuric "
        "and not dialysed. The result is proportional to 1 − 24 × ΔPCr/(Δt × MaxΔPCr/day), so a smaller value lowers "
        "the estimate when creatinine is rising and raises it when falling. Negative results (a rise faster than the "
        "assumed maximum) are reported as 0; a falling creatinine gives a factor above 1, which is kept (recovery). "
        "Creatinine in µmol/L is converted.",
    ),
    examples=(
        Example({"baseline_creatinine": 1.0, "baseline_egfr": 100, "creatinine_1": 1.0, "creatinine_2": 2.0, "hours": 24},
                22.2, "Hand-computed with Chen 2013 equation: (1.0×100/1.5) × (1 − 24×1.0/(24×1.5))", 0.05),
        Example({"baseline_creatinine": 1.0, "baseline_egfr": 90, "creatinine_1": 3.0, "creatinine_2": 2.5, "hours": 24,
                 "max_increase_per_day": 1.0}, 49.1,
                "Hand-computed with Chen 2013 equation (recovery): (1.0×90/2.75) × (1 + 24×0.5/24)", 0.05),
    ),
)

# -- FEUrea ----------------------------------------------------------------------------------------
FEUREA = Calculator(
    id="feurea",
    name="Fractional Excretion of Urea (FEUrea)",
    aliases=("Fractional Excretion of Urea (FEUrea)", "FEUrea", "FEUN", "Fractional excretion of urea nitrogen"),
    domain=Domain.MEDICINE,
    tags=("nephrology", "AKI", "prerenal", "diuretics"),
    inputs=(
        replace(BUN, key="serum_bun", label="Serum BUN", aliases=(*BUN.aliases, "Serum BUN", "Serum urea")),
        replace(BUN, key="urine_urea", label="Urine urea nitrogen", min=1, max=5000,
                aliases=("Urine urea nitrogen", "Urine urea", "UUN", "urine BUN")),
        _cr("serum_creatinine", "Serum creatinine", "Serum creatinine", "Creatinine", optional=False),
        _cr("urine_creatinine", "Urine creatinine", "Urine creatinine", "UCr", optional=False, max=1000),
    ),
    compute=lambda v: v["urine_urea"] * v["serum_creatinine"] / (v["serum_bun"] * v["urine_creatinine"]) * 100,
    output=Output("decimal", "%", 1, "FEUrea"),
    bands=(
        Band("≤ 35%: suggests prerenal azotaemia", None, 35.05),
        Band("35-50%: indeterminate", 35.05, 50.05),
        Band("> 50%: suggests intrinsic renal injury (e.g. ATN)", 50.05, None),
    ),
    reference=Reference(
        purpose="Separates prerenal from intrinsic acute kidney injury, including in patients on diuretics.",
        when_to_use="Oliguric or non-oliguric AKI, particularly after diuretics when FENa is unreliable.",
        formula="FEUrea (%) = (urine urea × serum creatinine) / (serum urea × urine creatinine) × 100.",
        interpretation="≤ 35% prerenal; > 50% intrinsic renal (Carvounis 2002: sensitivity 90%, specificity 96% for "
        "prerenal at ≤ 35%).",
        citation="Carvounis CP, Nisar S, Guro-Razuman S. Significance of the fractional excretion of urea in the "
        "differential diagnosis of acute renal failure. Kidney Int. 2002;62(6):2223-2229.",
        notes="Creatinine urine/serum must use the same units as each other, as must urea; mixed units are converted "
        "to mg/dL first.",
    ),
    examples=(
        Example({"serum_bun": 60, "urine_urea": 300, "serum_creatinine": 2.0, "urine_creatinine": 25}, 40.0,
                "Hand-computed with Carvounis 2002 formula: (300 × 2.0)/(60 × 25) × 100", 0.05),
        Example({"serum_bun": 40, "urine_urea": 200, "serum_creatinine": 3.0, "urine_creatinine": 30}, 50.0,
                "Hand-computed with Carvounis 2002 formula: (200 × 3.0)/(40 × 30) × 100", 0.05),
    ),
)

# -- CRRT dose -------------------------------------------------------------------------------------
def _rate(key: str, label: str, *aliases: str, help: str = "Default 0.") -> Input:
    return Input(key, label, unit="mL/h", min=0, max=20000, optional=True, default=0.0, aliases=(label, *aliases),
                 help=help)


def _crrt(v):
    effluent = v["dialysate_rate"] + v["pre_replacement_rate"] + v["post_replacement_rate"] + v["net_uf_rate"]
    if effluent <= 0:
        raise CalculatorInputError("crrt_dose", "dialysate_rate", "give at least one effluent flow (dialysate, "
                                   "replacement or net ultrafiltration)")
    dose = effluent / v["weight"]
    d = {"effluent_rate_ml_h": round(effluent, 1)}
    if v["blood_flow"] is not None:
        if v["hematocrit"] is None:
            raise CalculatorInputError("crrt_dose", "hematocrit", "blood flow needs the hematocrit for plasma flow")
        plasma = v["blood_flow"] * 60 * (1 - v["hematocrit"] / 100)  # mL/h
        dilution = plasma / (plasma + v["pre_replacement_rate"])
        uf = v["pre_replacement_rate"] + v["post_replacement_rate"] + v["net_uf_rate"]
        d.update(plasma_flow_ml_h=round(plasma, 1), predilution_factor=round(dilution, 3),
                 dose_corrected_for_predilution_ml_kg_h=round(dose * dilution, 1),
                 filtration_fraction_percent=round(uf / (plasma + v["pre_replacement_rate"]) * 100, 1))
    return dose, d


CRRT = Calculator(
    id="crrt_dose",
    name="CRRT Dosing Calculator",
    aliases=("CRRT Dosing Calculator", "CRRT effluent dose", "CRRT dose"),
    domain=Domain.CRITICAL_CARE,
    tags=("nephrology", "AKI", "dialysis", "ICU", "renal replacement therapy"),
    inputs=(
        WEIGHT,
        _rate("dialysate_rate", "Dialysate flow rate", "Dialysate rate", "Qd"),
        _rate("pre_replacement_rate", "Pre-filter replacement fluid rate", "Pre-filter replacement rate",
              "Replacement fluid rate (pre-filter)"),
        _rate("post_replacement_rate", "Post-filter replacement fluid rate", "Post-filter replacement rate",
              "Replacement fluid rate (post-filter)"),
        _rate("net_uf_rate", "Net ultrafiltration (fluid removal) rate", "Patient fluid removal rate", "Net UF",
              "Net ultrafiltration rate"),
        Input("blood_flow", "Blood flow rate", unit="mL/min", min=10, max=600, optional=True,
              aliases=("Blood flow rate", "Qb"), help="Optional; with hematocrit gives predilution and filtration fraction."),
        Input("hematocrit", "Hematocrit", unit="percent", min=5, max=75, optional=True, aliases=("Hematocrit", "Hct")),
    ),
    compute=_crrt,
    output=Output("decimal", "mL/kg/h", 1, "Effluent dose"),
    bands=(
        Band("Below the KDIGO delivered target (< 20 mL/kg/h)", None, 20),
        Band("KDIGO delivered target (20-25 mL/kg/h); prescribe somewhat higher to allow for downtime", 20, 25.05),
        Band("Above the KDIGO target (> 25 mL/kg/h): no outcome benefit (RENAL, ATN trials)", 25.05, None),
    ),
    reference=Reference(
        purpose="Weight-based effluent dose of continuous renal replacement therapy.",
        when_to_use="Prescribing or auditing CVVH, CVVHD or CVVHDF in AKI.",
        formula="Effluent rate (mL/h) = dialysate + pre-filter replacement + post-filter replacement + net "
        "ultrafiltration; dose = effluent / weight (mL/kg/h). Plasma flow Qp = Qb × 60 × (1 − Hct); predilution "
        "factor = Qp / (Qp + Q_pre); corrected dose = dose × factor; filtration fraction = (Q_pre + Q_post + net UF) / "
        "(Qp + Q_pre).",
        interpretation="KDIGO: deliver 20-25 mL/kg/h; keep the filtration fraction below about 20-25% to limit filter "
        "clotting.",
        citation="KDIGO Acute Kidney Injury Work Group. KDIGO Clinical Practice Guideline for Acute Kidney Injury. Kidney "
        "Int Suppl. 2012;2(1):1-138 (recommendation 5.8.4); RENAL Replacement Therapy Study Investigators. Intensity "
        "of continuous renal-replacement therapy in critically ill patients. N Engl J Med. 2009;361(17):1627-1638.",
        notes="Flows default to 0 when not given (e.g. no dialysate in CVVH). The headline dose is uncorrected; the "
        "predilution-corrected dose needs blood flow and haematocrit.",
    ),
    examples=(
        Example({"weight": 80, "dialysate_rate": 1000, "pre_replacement_rate": 500, "post_replacement_rate": 500,
                 "net_uf_rate": 120}, 26.5, "Hand-computed per KDIGO effluent definition: 2120 mL/h / 80 kg", 0.05),
        Example({"weight": 70, "dialysate_rate": 1500, "net_uf_rate": 50}, 22.1,
                "Hand-computed per KDIGO effluent definition (CVVHD): 1550 / 70", 0.05),
    ),
)

CALCULATORS = [KDIGO_AKI, KEGFR, FEUREA, CRRT]
