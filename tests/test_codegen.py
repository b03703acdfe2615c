"""Generated run_python programs compute every registry calculator, self-contained.

Every calculator x every worked example: the generated program, run in a fresh ``python -I -S``
process (stdlib only, calcmate not importable) and through the real ``run_python`` MCP tool,
prints exactly ``calc(inputs).value`` as its last line. The programs run in one batched
subprocess (each in its own namespace) and through the sandbox's warm pool, to stay fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import subprocess
import sys
import textwrap

import pytest

from calcmate.calculators import Calculator, Input, Output, Reference, registry
from calcmate.calculators.codegen import CodegenError, generate, json_value
from calcmate.domains import Domain

# Calculators that cannot be written as a self-contained program, with the reason. Empty: all can.
# generate() must raise CodegenError for each one listed here.
EXCLUDED: dict[str, str] = {}

# Inputs beyond the worked examples that take paths the examples do not: another registry
# calculator run from inside compute (registry().get(...)), optional inputs left out.
EXTRA_INPUTS = [
    ("carboplatin_calvert", {"target_auc": 5, "age": 60, "sex": "female", "weight": [154, "lb"], "creatinine": [97, "µmol/L"]}),
    ("bsa_based_dosing", {"dose_per_m2": 75, "height": 170, "weight": 65}),
    ("cockcroft_gault", {"age": "71 years", "sex": "F", "weight": "58.5 kg", "creatinine": "1.3 mg/dL"}),
    # inputs in other units: converted in code, from the number as given
    ("cockcroft_gault", {"age": 60, "sex": "male", "weight": "180 lb", "creatinine": [88.4, "µmol/L"]}),
    ("sirs_criteria", {"temperature": "100.4 °F", "heart_rate": 95, "resp_rate": 22, "wbc": "13200 cells/µL"}),
    ("homa_ir", {"glucose": "5.5 mmol/L", "insulin": 12}),
    ("estimated_due_date", {"lmp": "2024-01-10", "cycle_length": "4 weeks"}),
    ("cdc_infant_weight_for_length", {"sex": "female", "length": "30 in", "weight": "18 lb"}),
    ("cdc_infant_length_for_age", {"sex": "male", "age_months": "26 weeks", "length": 66}),
]


def _cases() -> list[tuple[str, int, dict]]:
    out = []
    for calc in registry():
        for i, ex in enumerate(calc.examples):
            out.append((calc.id, i, dict(ex.inputs)))
    for j, (cid, inputs) in enumerate(EXTRA_INPUTS):
        out.append((cid, 1000 + j, inputs))
    return out


CASES = _cases()
IDS = [f"{cid}-{'ex' if i < 1000 else 'extra'}{i % 1000}" for cid, i, _ in CASES]

RUNNER = textwrap.dedent('''
    import contextlib, io, json, sys, traceback
    out = {}
    for key, code in json.load(sys.stdin).items():
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(code, key, "exec"), {"__name__": "__main__"})
            out[key] = {"ok": True, "stdout": buf.getvalue()}
        except BaseException:
            out[key] = {"ok": False, "stdout": buf.getvalue() + traceback.format_exc()}
    out["__modules__"] = sorted(sys.modules)
    json.dump(out, sys.stdout)
''')


@pytest.fixture(scope="module")
def programs():
    progs = {}
    for (cid, i, inputs), key in zip(CASES, IDS):
        if cid in EXCLUDED:
            continue
        progs[key] = generate(registry().get(cid), inputs)
    return progs


@pytest.fixture(scope="module")
def isolated_runs(programs, tmp_path_factory):
    """All programs in one fresh interpreter without site-packages or the repo on sys.path."""
    cwd = tmp_path_factory.mktemp("codegen_run")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", RUNNER], input=json.dumps({k: p.code for k, p in programs.items()}),
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _last_json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("cid", "i", "inputs"), CASES, ids=IDS)
def test_program_prints_registry_value(cid, i, inputs, programs, isolated_runs):
    key = IDS[CASES.index((cid, i, inputs))]
    if cid in EXCLUDED:
        with pytest.raises(CodegenError):
            generate(registry().get(cid), inputs)
        return
    calc = registry().get(cid)
    prog = programs[key]
    run = isolated_runs[key]
    assert run["ok"], f"{key}:\n{prog.code}\n---\n{run['stdout']}"
    expected = calc(inputs).value
    assert _last_json(run["stdout"]) == json_value(expected), f"{key}:\n{prog.code}\n---\n{run['stdout']}"
    assert prog.value == expected
    # the program computes from v: it is self-contained and does not reach for calcmate
    assert "calcmate" not in prog.code.replace("calcmate://", "")
    assert "\nv = {" in prog.code and re.search(r"^value(, details)? = (\w+)\(v\)$", prog.code, re.M)


def test_no_calcmate_in_the_isolated_interpreter(isolated_runs):
    assert not any(m == "calcmate" or m.startswith("calcmate.") for m in isolated_runs["__modules__"])
    assert "numpy" not in isolated_runs["__modules__"]  # stdlib alone suffices


def test_every_registry_calculator_is_covered():
    covered = {cid for cid, _, _ in CASES}
    assert {c.id for c in registry()} <= covered
    assert all(c.examples for c in registry())
    assert set(EXCLUDED) <= covered


def test_programs_through_the_run_python_tool(programs):
    """The real run_python MCP tool (sandbox warm pool): same last line as in-process."""
    from mcp import Client

    from calcmate.tools.python import build_server
    from calcmate.tools.sandbox import SandboxPool

    pool = SandboxPool(2)

    async def go():
        async with Client(build_server(pool)) as c:
            sem = asyncio.Semaphore(4)

            async def one(key, code):
                async with sem:
                    res = await c.call_tool("run_python", {"code": code})
                    return key, res.is_error, "\n".join(getattr(x, "text", "") for x in res.content)

            return await asyncio.gather(*(one(k, p.code) for k, p in programs.items()))

    try:
        results = asyncio.run(go())
    finally:
        pool.close()
    bad = [(k, text[-400:]) for k, err, text in results if err or _last_json(text) != json_value(programs[k].value)]
    assert not bad, bad[:5]
    assert len(results) == len(programs)


def _v_line(code: str, key: str) -> str:
    return next(x for x in code.splitlines() if x.startswith(f"    {key!r}: "))


def _v_expr(line: str) -> str:
    return line.split(": ", 1)[1].rsplit(",  # ", 1)[0]


def test_header_formula_and_choice_labels_are_commented():
    cg = registry().get("cockcroft_gault")
    code = generate(cg, {"age": 60, "sex": "female", "weight": 60, "creatinine": 1.0}).code
    assert "# Creatinine Clearance (Cockcroft-Gault Equation)" in code.splitlines()[0]
    assert "CrCl (mL/min) = (140 − age)" in code  # the reference formula
    assert _v_line(code, "creatinine") == "    'creatinine': 1.0,  # Serum creatinine, mg/dL"
    assert '(140 - v["age"]) * v["weight"] / (72 * v["creatinine"])' in code  # the formula, computed
    kps = registry().get("karnofsky_performance_status")
    code = generate(kps, {"score": "Requires considerable assistance and frequent medical care"}).code
    assert _v_line(code, "score").startswith("    'score': 50,  # ") and "Requires considerable assistance" in code


# (calculator, inputs, key, number as given, what the expression must show, comment)
CONVERSIONS = [
    ("cockcroft_gault", {"age": 60, "sex": "female", "weight": 60, "creatinine": [88.4, "µmol/L"]}, "creatinine",
     "88.4", ["113.12"], "µmol/L -> mg/dL (creatinine 113.12 g/mol)"),
    ("cockcroft_gault", {"age": 60, "sex": "female", "weight": "180 lb", "creatinine": 1}, "weight",
     "180", ["0.45359237"], "lb -> kg"),
    ("sirs_criteria", {"temperature": "101.3 °F", "heart_rate": 80, "resp_rate": 16, "wbc": 8}, "temperature",
     "101.3", ["32"], "°F -> °C"),
    ("sirs_criteria", {"temperature": 37, "heart_rate": 80, "resp_rate": 16, "wbc": "13200 cells/µL"}, "wbc",
     "13200", ["1000"], "cells/µL -> 10^9/L"),
    ("homa_ir", {"glucose": "5.5 mmol/L", "insulin": 12}, "glucose", "5.5", ["180.16"],
     "mmol/L -> mg/dL (glucose 180.16 g/mol)"),
    ("nutritional_risk_index", None, "albumin", None, [], "g/dL -> g/L"),
    ("estimated_due_date", {"lmp": "2024-01-10", "cycle_length": "4 weeks"}, "cycle_length", "4", ["round(", "7"],
     "weeks -> day"),
]


@pytest.mark.parametrize(("cid", "inputs", "key", "given", "shows", "comment"), CONVERSIONS,
                         ids=[f"{c[0]}-{c[2]}" for c in CONVERSIONS])
def test_unit_conversions_are_code_from_the_value_as_given(cid, inputs, key, given, shows, comment):
    """The program starts from the number the SQL result showed and converts it in code, with the
    registry's own factor: the expression evaluates to the registry's canonical value."""
    from calcmate.units import ANALYTES

    calc = registry().get(cid)
    if inputs is None:  # the worked example that gives this input in another unit
        inputs = next(dict(ex.inputs) for ex in calc.examples if isinstance(ex.inputs.get(key), (str, list)))
    canon = calc.validate(inputs)[key]
    line = _v_line(generate(calc, inputs).code, key)
    expr = _v_expr(line)
    got = eval(expr, {"__builtins__": {"round": round}})  # noqa: S307 - a generated arithmetic expression
    assert got == pytest.approx(canon, rel=1e-9) and type(got) is type(canon), line
    assert line.endswith(f"  # {calc.input(key).label}, {comment}"), line
    if given is not None:
        assert expr.removeprefix("round(").removeprefix("(").startswith(given + " "), line
    assert all(s in expr for s in shows), line
    assert repr(canon) not in expr  # not the converted number, written out
    if "g/mol" in comment:  # the molar mass is the registry's, from units.ANALYTES
        assert f"{ANALYTES[calc.input(key).analyte].molar_mass:g}" in expr


def test_a_conversion_at_a_criterion_edge_agrees_with_the_registry():
    """100.4 °F is exactly 38 °C, which does not meet SIRS's "> 38 °C" (Input.coerce drops the
    float noise of the conversion). The program, converting in code from 100.4, must agree."""
    calc = registry().get("sirs_criteria")
    inputs = {"temperature": "100.4 °F", "heart_rate": 80, "resp_rate": 16, "wbc": 8}
    assert calc.validate(inputs)["temperature"] == 38.0
    prog = generate(calc, inputs)
    ns: dict = {}
    exec(prog.code.rsplit("\nprint(", 1)[0].split("\nfor name, x in details", 1)[0], ns)  # noqa: S102
    assert ns["value"] == calc(inputs).value == 0


def test_inputs_in_canonical_units_stay_literals():
    cg = registry().get("cockcroft_gault")
    code = generate(cg, {"age": "71 years", "sex": "F", "weight": "58.5 kg", "creatinine": "1.3 mg/dL"}).code
    assert _v_line(code, "weight") == "    'weight': 58.5,  # Weight, kg"
    assert _v_line(code, "creatinine") == "    'creatinine': 1.3,  # Serum creatinine, mg/dL"
    assert _v_line(code, "age") == "    'age': 71.0,  # Age, year"  # "years" is the same unit
    assert _v_line(code, "sex").startswith("    'sex': 'female',  # Sex")


def test_every_example_conversion_is_code_within_1e9():
    """Across the registry's worked examples: each input given in another unit is an expression
    from its number, and the exact-only variant (the fallback) is exact or absent."""
    from calcmate.calculators.codegen import _conversion
    from calcmate.calculators.spec import _same_unit, _split_value_unit

    n = 0
    for calc in registry():
        for ex in calc.examples:
            canon = calc.validate(ex.inputs)
            for key, raw in ex.inputs.items():
                inp = calc.input(key)
                if inp.type not in ("number", "integer") or not inp.unit or isinstance(raw, (int, float)):
                    continue
                num, unit = _split_value_unit(raw, ValueError)
                conv = _conversion(inp, raw, canon[key])
                if unit is None or _same_unit(unit, inp.unit) or num == canon[key]:
                    assert conv is None, (calc.id, key, raw)
                    continue
                n += 1
                assert conv is not None, (calc.id, key, raw)
                got = eval(conv.expr, {"__builtins__": {"round": round}})  # noqa: S307
                assert got == pytest.approx(canon[key], rel=1e-9), (calc.id, key, conv)
                exact = _conversion(inp, raw, canon[key], exact_only=True)
                assert exact is None or eval(exact.expr, {"__builtins__": {"round": round}}) == canon[key]  # noqa: S307
    assert n >= 15  # the examples exercise lb, in, °F, molar, count and volume conversions


def test_details_are_printed_before_the_value():
    calc = registry().get("cha2ds2_vasc")
    ex = calc.examples[0]
    res = calc(ex.inputs)
    out = subprocess.run([sys.executable, "-I", "-S", "-c", generate(calc, ex.inputs).code],
                         capture_output=True, text=True, timeout=30)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0, out.stderr
    assert json.loads(lines[-1]) == res.value
    for k, x in res.details.items():
        assert f"{k}: {x}" in lines


def test_a_nested_registry_calculator_is_inlined_not_imported():
    calc = registry().get("carboplatin_calvert")
    prog = generate(calc, dict(EXTRA_INPUTS[0][1]))
    assert "registry(" not in prog.code and "import calcmate" not in prog.code
    assert "def cockcroft_gault_calculator(" in prog.code  # Cockcroft-Gault's wrapper: defaults + rounding
    assert prog.value == calc(EXTRA_INPUTS[0][1]).value


def _not_in_calcmate(v):
    return v["x"] * 2


def test_codegen_error_names_the_calculator_and_reason():
    calc = Calculator(
        id="outside_calc", name="Outside", domain=Domain.MEDICINE,
        inputs=(Input("x", "X", unit="kg"),), compute=_not_in_calcmate, output=Output("decimal", "kg", 1),
        reference=Reference("p", "w", "f", "c"),
    )
    with pytest.raises(CodegenError, match="outside_calc.*not a function defined in calcmate"):
        generate(calc, {"x": 2})


def test_invalid_inputs_raise_the_registry_error():
    from calcmate.calculators import CalculatorInputError

    with pytest.raises(CalculatorInputError, match="creatinine"):
        generate(registry().get("cockcroft_gault"), {"age": 60, "sex": "female", "weight": 60})


def _answer(calc, inputs, final):
    from calcmate.tasks import CalcAnswer, CalcInput

    return CalcAnswer(order=1, name=calc.name, final_answer=final, calculator_id=calc.id,
                      inputs=[CalcInput(field=calc.input(k).label, value=v) for k, v in inputs.items()])


@pytest.mark.parametrize("cid", ["cockcroft_gault", "carboplatin_calvert", "gestational_age", "barthel_index"])
def test_oracle_python_for_emits_the_generated_program(cid):
    """The oracle / scripted teacher computes registry-computed answers: no ground truth in the code."""
    from calcmate.agent.oracle import python_for

    calc = registry().get(cid)
    inputs = next((x for c, x in EXTRA_INPUTS if c == cid), None) or dict(calc.examples[0].inputs)
    value = json_value(calc(inputs).value)
    code, why = python_for(_answer(calc, inputs, value), dict(inputs))
    assert code is not None and not why
    assert code == generate(calc, inputs).code
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert _last_json(out.stdout) == value


def test_oracle_python_for_never_prints_a_label_it_cannot_compute():
    from calcmate.agent.oracle import python_for
    from calcmate.tasks import CalcAnswer, CalcInput

    calc = registry().get("cockcroft_gault")
    inputs = dict(calc.examples[0].inputs)
    # a benchmark label the registry disagrees with: the program computes the registry's value, not the label
    code, why = python_for(_answer(calc, inputs, 12345.6), dict(inputs))
    assert code is not None and "12345.6" not in code
    # no such calculator in the registry: no program, and the reason says so
    unknown = CalcAnswer(order=1, name="Zz Unknown Index", final_answer=7, inputs=[CalcInput(field="a", value=1)])
    code, why = python_for(unknown)
    assert code is None and "not in the calculator registry" in why


def _table_rows(markdown: str) -> dict[float, dict[str, tuple[float, float, float]]]:
    """x -> {"male": (L, M, S), "female": (L, M, S)} from the reference's LMS markdown table."""
    rows = {}
    for ln in markdown.splitlines():
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) == 7 and all(re.fullmatch(r"-?[\d.]+(e-?\d+)?", c) for c in cells):
            x, *p = map(float, cells)
            rows[x] = {"male": tuple(p[:3]), "female": tuple(p[3:])}
    return rows


@pytest.mark.parametrize(("cid", "inputs", "n_rows"), [
    ("cdc_infant_length_for_age", {"sex": "female", "age_months": 7.2, "length": 66}, 1),  # the completed-month row
    ("cdc_infant_length_for_age", {"sex": "male", "age_months": 35.9, "length": 96}, 1),  # past the last row
    ("cdc_infant_head_circumference_for_age", {"sex": "male", "age_months": 0.5, "head_circumference": 37}, 1),
    ("cdc_infant_weight_for_length", {"sex": "female", "length": "30 in", "weight": "18 lb"}, 2),
])
def test_growth_programs_use_only_lms_rows_the_fetched_reference_shows(cid, inputs, n_rows):
    """The program embeds the LMS rows it interpolates between, no more, and each is a row of the
    table in the document the reference tool's fetch serves for this calculator."""
    from mcp import Client

    from calcmate.tools.reference import build_server

    calc = registry().get(cid)
    prog = generate(calc, inputs)

    async def fetch():
        async with Client(build_server()) as c:
            res = await c.call_tool("fetch", {"url": calc.url})
            return "\n".join(getattr(x, "text", "") for x in res.content)

    served = asyncio.run(fetch())
    from calcmate.tools.official import fetched

    assert served == fetched(calc.url, calc.reference_markdown())  # the official fetch layout of the document
    table = _table_rows(served)
    assert len(table) >= 37  # the whole table, both sexes
    name = re.search(r"^(\w+_DATA) = ", prog.code, re.M).group(1)
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(prog.code, ns)  # noqa: S102 - the generated program
    data = ns[name]
    sex = calc.validate(inputs)["sex"]
    if isinstance(next(iter(data)), tuple):  # {(table, sex, x): rows}: the rows one lookup uses
        (key, rows), = data.items()
        assert key[1] == sex and len(rows) == n_rows
        pairs = [(x, tuple(lms)) for x, *lms in rows]
    else:  # {table: {sex: (xs, rows)}}: the sex's column of the table, read by completed month
        (by_sex,) = data.values()
        assert set(by_sex) == {sex}
        xs, rows = by_sex[sex]
        pairs = list(zip(xs, map(tuple, rows)))
    assert pairs
    for x, lms in pairs:  # every embedded row is a row of the document the fetch served
        assert table[x][sex] == lms
    assert re.search(rf"^{name} = ", prog.code, re.M)  # the table the program reads, embedded
    assert len(prog.code) < 6000  # one sex's column of one table (the completed-month lookup), not the whole file
