"""Verification: keep a trajectory only if it is right, for the right reasons.

A trajectory of a synthesized task passes when

* it finished with a structured final answer naming every executed calculator (``incomplete``),
  and no calculator of an arm the branch did not take (``wrong_branch``);
* every final value equals the registry's value within tolerance (``wrong_value``), and every
  final-answer entry carries its value (``answer_omits_value``);
* a ``run_python`` program *computes* each value (``not_computed``): its output shows the value,
  and re-running it in the sandbox with one of its inputs perturbed (a number that came from an
  earlier tool result, a flag, an option) changes that value. A program that prints a constant, or
  ignores its inputs, never passes;
* every ground-truth input value reached the agent through a tool result: SQL results for EHR
  inputs, SQL or Python results for inputs fed by an earlier calculator (``input_not_retrieved``);
* every input value a ``run_python`` program is given (the numbers its top-level assignments hold)
  appears in an earlier tool result, directly or after a unit conversion (``ungrounded_input``);
* each branch arm matches the decider's value, both the agent's reported value and the registry's,
  and no calculator of the arm not taken is computed or reported (``wrong_branch``);
* the execution follows the plan (``plan_not_followed``): every calculator the plan lists is run
  or sits on the arm not taken, its reference is looked up when the plan says references are
  looked up, and a calculator whose result feeds another is computed first.

Both tool vocabularies are read: ``run_sql`` and the official ``run_read_only_sql`` (JSON rows or
pipe tables, "SQL Execution Error: ..." strings are errors), and ``run_python`` observations as
raw output or the official "Output:\\n...". Matching uses the evaluator's own logic
(calcmate.scoring: name matching, ``values_match``, the EA evidence search), so "verified" here
and "correct" in evaluation mean the same thing.

``Verdict.feedback()`` is what a retried LLM executor is told: one process sentence per reason,
never a calculator name, an input value or a result (``Issue.detail`` keeps those for the record).
"""

from __future__ import annotations

import ast
import bisect
import functools
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from calcmate.agent.tools import SQL_TOOLS
from calcmate.agent.trajectory import ToolCallRecord, Trajectory
from calcmate.calculators.spec import normalize_name
from calcmate.scoring.metrics import SqlEvidence, item_matches, match_names, name_score
from calcmate.scoring.tolerance import parse_number, values_match
from calcmate.synth.composer import branch_from_dict
from calcmate.tasks import Task
from calcmate.tools.official import PY_NO_OUTPUT, is_error_text

log = logging.getLogger(__name__)

_norm = functools.lru_cache(maxsize=65536)(normalize_name)  # texts are normalised many times per trajectory

REASONS = ("not_finished", "incomplete", "wrong_value", "answer_omits_value", "not_computed", "input_not_retrieved",
           "ungrounded_input", "wrong_branch", "plan_not_followed")

# What a retried executor is told: the process that went wrong, never names, values or results.
PROCESS_FEEDBACK = {
    "not_finished": "You stopped without giving the final answer block.",
    "incomplete": "Your final answer leaves out a calculation the question needs.",
    "wrong_value": "A result in your final answer does not follow from the patient's data: check which record "
                   "you used, the units, and the formula in the reference.",
    "answer_omits_value": "Your final answer omits a value you computed.",
    "not_computed": "A result was not computed from its inputs: write code that derives it from the retrieved "
                    "values (printing a number you already decided on does not count).",
    "input_not_retrieved": "An input the calculation needs was never retrieved from the EHR with SQL.",
    "ungrounded_input": "A value you used appears in no tool result: take every input from what the tools "
                        "returned, converting units in code.",
    "wrong_branch": "The branch you followed does not match the rule and the result that decides it.",
    "plan_not_followed": "The plan lists a step you skipped, or your steps ran in an order the plan's "
                         "dependencies do not allow.",
}

PYTHON_TOOLS = ("run_python",)
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_UNSIGNED = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")  # "2024-07-25" is 2024, 07, 25


@dataclass
class Issue:
    reason: str  # one of REASONS
    detail: str  # for the outcome record; may name calculators and values, never shown to a model

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


@dataclass
class Verdict:
    ok: bool
    issues: list[Issue] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        return list(dict.fromkeys(i.reason for i in self.issues))

    def feedback(self) -> str:
        """Text for a retry: the process problems, one line per reason. It never names a calculator,
        an input value or a result, so a retried trajectory learns nothing the tools did not show."""
        return "\n".join(f"- {PROCESS_FEEDBACK[r]}" for r in self.reasons)

    def details(self) -> str:
        """Every issue with its detail (names, values): for logs and outcome records only."""
        return "\n".join(f"- {i.reason}: {i.detail}" for i in self.issues)


# -- observations in either tool vocabulary ----------------------------------------------------------
def _failed(c: ToolCallRecord) -> bool:
    return c.is_error or is_error_text(c.result)


def sql_text(result: str) -> str:
    """An SQL observation as pipe tables: the official JSON (``[{"sql_id", "result": [rows]}]``) is
    rendered as ``col | col`` lines (the EA evidence search reads ages from such headers); any
    other text is returned unchanged."""
    s = result.strip()
    if not s.startswith("["):
        return result
    try:
        data = json.loads(s)
    except ValueError:
        return result
    if not isinstance(data, list) or not all(isinstance(d, dict) and "result" in d for d in data):
        return result
    out: list[str] = []
    for d in data:
        rows = d["result"]
        if not isinstance(rows, list) or not rows:
            out.append(str(rows))
            continue
        cols = list(dict.fromkeys(k for r in rows if isinstance(r, dict) for k in r))
        out.append(" | ".join(cols))
        for r in rows:
            if isinstance(r, dict):
                out.append(" | ".join("NULL" if r.get(k) is None else str(r.get(k)) for k in cols))
        out.append(f"({len(rows)} rows)")
    return "\n".join(out)


def python_stdout(result: str) -> str:
    """What a program printed: the official "Output:\\n..." (without "Errors/Warnings") or raw output."""
    s = result.strip()
    if s == PY_NO_OUTPUT or s.startswith("Errors/Warnings:"):
        return ""
    if s.startswith("Output:"):
        s = s[len("Output:"):].lstrip("\n")
        return s.split("\n\nErrors/Warnings:\n", 1)[0]
    return s


def observation_text(c: ToolCallRecord) -> str:
    if c.tool in SQL_TOOLS:
        return sql_text(c.result)
    if c.tool in PYTHON_TOOLS:
        return python_stdout(c.result)
    return c.result


class _Evidence(SqlEvidence):
    """The evaluator's EA evidence search over any set of tool results."""

    def __init__(self, texts: list[str]):  # noqa: D107 - same fields as SqlEvidence
        self.raw = "\n".join(texts)
        self.norm = " " + _norm(self.raw) + " "
        flat = self.raw.replace(",", "")
        self.numbers = sorted({float(x) for x in _NUM.findall(flat)} | {float(x) for x in _UNSIGNED.findall(flat)})


    def contains(self, value: Any, field: str | None = None) -> bool:
        return super().contains(value, field) or _race_evidence(self.raw, value, field)


_RACE_FIELD = re.compile(r"(?i)\b(black|african)\b")
_RACE_COLS = ("ethnicity", "race")


def _race_evidence(raw: str, value: Any, fld: str | None) -> bool:
    """"Black race: Yes/No" shown as the patient's recorded ethnicity ("Black or African American",
    "White"): the EHR stores the category, the calculator asks the yes/no question."""
    if not fld or not _RACE_FIELD.search(fld):
        return False
    yes = _norm(str(value)) in ("yes", "true", "1")
    no = _norm(str(value)) in ("no", "false", "0")
    if not (yes or no):
        return False
    cells: list[str] = []
    cols: list[str] | None = None
    for line in raw.splitlines():
        parts = [p.strip() for p in line.split(" | ")]
        if cols is not None and len(parts) == len(cols):
            cells += [parts[i] for i, c in enumerate(cols) if c.lower() in _RACE_COLS]
        if any(p.lower() in _RACE_COLS for p in parts):
            cols = parts
    cells = [c for c in cells if c and c.upper() != "NULL"]
    return any(bool(_RACE_FIELD.search(c)) == yes for c in cells)


def _results(traj: Trajectory, tools: tuple[str, ...]) -> list[str]:
    return [observation_text(c) for c in traj.tool_calls if c.tool in tools and not _failed(c)]


def shows_value(texts: list[str], truth: Any, rel_tol: float) -> bool:
    """Does any tool output show ``truth`` (a number within tolerance, or the category text)?"""
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        for t in texts:
            for x in _NUM.findall(t.replace(",", "")):
                if values_match(float(x), truth, rel_tol):
                    return True
        return False
    k = _norm(str(truth))
    return bool(k) and any(f" {k} " in f" {_norm(t)} " for t in _decoded(texts))


def _decoded(texts: list[str]) -> list[str]:
    """Outputs as printed, plus JSON-printed strings decoded (a printed "a\\nb" is the text a<newline>b)."""
    out = list(texts)
    for t in texts:
        for line in t.strip().splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, str):
                out.append(v)
    return out


# -- programs: literals, grounding, perturbation ----------------------------------------------------
@dataclass
class Literal:
    """A constant of a program at a data position (what a top-level assignment holds)."""

    start: int  # byte offsets of the constant's token in the UTF-8 source
    end: int
    value: Any  # int | float | bool | str; the sign of a unary minus applied
    checked: bool  # a grounding position: the whole value, a container item, or the leftmost operand
    nested: bool = False  # inside a container or a call (``v = {"age": 65}``), not a bare ``x = 65``


def _walk_data(node: ast.AST, out: list[tuple[ast.Constant, int, bool, bool]], checked: bool, nested: bool = False) -> None:
    if isinstance(node, ast.Constant):
        if node.value is not None and not isinstance(node.value, bytes) and not isinstance(node.value, complex):
            out.append((node, 1, checked, nested))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
        if isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
            out.append((node.operand, -1 if isinstance(node.op, ast.USub) else 1, checked, nested))
    elif isinstance(node, ast.Dict):
        for v in node.values:
            _walk_data(v, out, checked, True)
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for v in node.elts:
            _walk_data(v, out, checked, True)
    elif isinstance(node, ast.BinOp):  # "88.4 * 113.12 / 10000": the number as given, then factors
        _walk_data(node.left, out, checked, nested)
        _walk_data(node.right, out, False, nested)
    elif isinstance(node, ast.Call):  # date(2024, 7, 25), float("1.4")
        for a in node.args:
            _walk_data(a, out, checked, True)
        for k in node.keywords:
            _walk_data(k.value, out, checked, True)


def _top_statements(body: list[ast.stmt]):
    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield st
        for attr in ("body", "orelse", "finalbody"):
            yield from _top_statements(getattr(st, attr, []) or [])
        for h in getattr(st, "handlers", []) or []:
            yield from _top_statements(h.body)


def _read_by_functions(tree: ast.AST) -> set[str]:
    """Names that function bodies read but do not bind: the module globals they use."""
    out: set[str] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = fn.args
        bound = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]}
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        loads: set[str] = set()
        for st in body:
            for n in ast.walk(st):
                if isinstance(n, ast.Name):
                    (bound.add if isinstance(n.ctx, ast.Store) else loads.add)(n.id)
        out |= loads - bound
    return out


@functools.lru_cache(maxsize=4096)
def data_literals(code: str) -> list[Literal] | None:
    """The constants a program's top-level assignments hold (its inputs, as the code was given
    them); None when the code does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    raw = code.encode("utf-8")
    starts = [0]
    for line in raw.split(b"\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found: list[tuple[ast.Constant, int, bool, bool]] = []
    formula = _read_by_functions(tree)
    for st in _top_statements(tree.body):
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            # a constant the program's functions read (a coefficient table, 2.54 cm per inch) is
            # part of the formula, not an input: varied like any literal, never required in a result
            _walk_data(st.value, found, not (names and names <= formula))
    out: list[Literal] = []
    for node, sign, checked, nested in found:
        if node.end_lineno is None or node.end_col_offset is None:
            continue
        v = node.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = sign * v
        out.append(Literal(starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset,
                           v, checked, nested))
    return out


def _option_strings(code: str) -> list[str]:
    """String constants a program compares against or looks up (its options), for perturbing a
    categorical input."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for sub in [n.left, *n.comparators]:
                for c in ast.walk(sub):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str):
                        out.append(c.value)
        elif isinstance(n, ast.Dict):
            out += [k.value for k in n.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return [s for s in dict.fromkeys(out) if 0 < len(s) <= 60]


def _splice(code: str, edits: list[tuple[Literal, Any]]) -> str:
    raw = code.encode("utf-8")
    for lit, new in sorted(edits, key=lambda e: e[0].start, reverse=True):
        if isinstance(new, (int, float)) and not isinstance(new, bool):
            new = abs(new)  # the sign stays on its unary operator
        raw = raw[:lit.start] + repr(new).encode("utf-8") + raw[lit.end:]
    return raw.decode("utf-8")


def _numeric_perturbations(v: float | int) -> list[Any]:
    v = abs(v)
    if isinstance(v, int):
        return [v + 1, v * 2 + 3, max(v - 1, 0), v * 10 + 7]
    return [v * 1.5 + 1.0, v * 0.5, v * 3 + 5.0, v * 0.1]


_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def _shift_date(s: str) -> str | None:
    import datetime as dt

    m = _ISO_DATE.match(s)
    if not m:
        return None
    try:
        d = dt.date(int(m[1]), int(m[2]), int(m[3])) + dt.timedelta(days=37)
    except ValueError:
        return None
    return d.isoformat() + s[10:]


_BATCH = """import contextlib as _cl, io as _io, json as _js, sys as _sys
for _i, _c in enumerate(_js.loads({payload!r})):
    _buf, _ok = _io.StringIO(), True
    try:
        with _cl.redirect_stdout(_buf):
            exec(compile(_c, "<program>", "exec"), {{"__name__": "__main__"}})
    except SystemExit as _e:
        _ok = _e.code in (None, 0)
    except BaseException:
        _ok = False
    _sys.__stdout__.write(_js.dumps({{"i": _i, "ok": _ok, "out": _buf.getvalue()}}) + "\\n")
    _sys.__stdout__.flush()
"""


class Runner:
    """Runs programs in the ``run_python`` sandbox (the process-wide warm pool), memoised by source.

    ``run_many`` executes a batch of programs in ONE sandbox call (each in a fresh namespace, its
    stdout captured), since a sandbox call costs a fork and its confinement (10-20 ms) while a
    generated program runs in about a millisecond; a batch that dies as a whole (a program calling
    ``os._exit``, a time-out) is re-run one program per call. Tests may substitute any object with
    ``run_many(codes) -> list[str | None]`` (stdout, or None when the program failed)."""

    def __init__(self, wall_s: float = 20.0, cache_size: int = 8192, batch: int = 48):
        self.wall_s, self.cache_size, self.batch = wall_s, cache_size, batch
        self._cache: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()
        self.calls = 0  # sandbox calls made
        self.programs = 0  # programs executed

    def _sandbox(self, code: str, max_chars: int) -> str | None:
        from calcmate.tools.sandbox import SandboxLimits, get_pool

        pool = get_pool()
        lim = SandboxLimits(wall_s=self.wall_s, cpu_s=max(1, int(self.wall_s)), mem_mb=pool.limits.mem_mb,
                            max_chars=max_chars, nproc=pool.limits.nproc, fsize_mb=pool.limits.fsize_mb)
        with self._lock:
            self.calls += 1
        res = pool.run(code, lim)
        return None if not res.ok or res.truncated else res.output

    def run(self, code: str) -> str | None:
        return self.run_many([code])[0]

    def run_many(self, codes: list[str]) -> list[str | None]:
        with self._lock:
            todo = list(dict.fromkeys(c for c in codes if c not in self._cache))
        got: dict[str, str | None] = {}
        for k in range(0, len(todo), self.batch):
            chunk = todo[k:k + self.batch]
            got.update(self._run_batch(chunk) if len(chunk) > 1 else {chunk[0]: self._sandbox(chunk[0], 200_000)})
        with self._lock:
            self.programs += len(todo)
            for c, out in got.items():
                self._cache[c] = out
            out = [got[c] if c in got else self._cache[c] for c in codes]
            for c in codes:
                if c in self._cache:
                    self._cache.move_to_end(c)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def _run_batch(self, chunk: list[str]) -> dict[str, str | None]:
        raw = self._sandbox(_BATCH.format(payload=json.dumps(chunk)), 4_000_000)
        res: dict[int, str | None] = {}
        for line in (raw or "").splitlines():
            try:
                r = json.loads(line)
                res[int(r["i"])] = r["out"] if r["ok"] else None
            except (ValueError, KeyError, TypeError):
                continue
        if len(res) != len(chunk):  # the batch died part-way: one program per call
            return {c: (res[i] if i in res else self._sandbox(c, 200_000)) for i, c in enumerate(chunk)}
        return {c: res[i] for i, c in enumerate(chunk)}


_RUNNER: Runner | None = None


def default_runner() -> Runner:
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = Runner()
    return _RUNNER


def _lines(text: str) -> list[str]:
    return [ln for ln in text.strip().splitlines() if ln.strip()]


def _value_line(out: str, truth: Any, rel_tol: float) -> int | None:
    """Position, counted from the end, of the last printed line that shows ``truth``."""
    ls = _lines(out)
    for k, ln in enumerate(reversed(ls)):
        if shows_value([ln], truth, rel_tol):
            return k
    return None


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def perturbations(code: str, truth: Any, grounded: Any, own_inputs: list[float] = (), rel_tol: float = 0.01
                  ) -> list[list[tuple[Literal, Any]]] | None:
    """The input variations to try, cheapest first; None when the code does not parse.

    Inputs are the program's data literals (``data_literals``): numbers that an earlier tool result
    shows (never one equal to the result, unless the task gives that number as one of this
    calculator's own inputs, as for a scale whose score is its input), flags (``None`` counts as an
    unset flag) and options or dates. Single changes come first; then joint ones (every flag set
    one way, with each number moved), because a rule such as "all four criteria and P/F <= 300"
    does not move when any single input does."""
    lits = data_literals(code)
    if lits is None:
        return None
    truth_q = parse_number(truth) if not isinstance(truth, bool) else None

    def allowed(lit: Literal) -> bool:
        v = lit.value
        if not grounded(v):
            return False
        if truth_q is not None and values_match(float(v), truth_q[0], rel_tol):
            # a number equal to the result varies only as structured input data that is exactly
            # one of this calculator's inputs (a scale whose score is its input: {"level": 3});
            # a bare "value = 3" is the answer written down
            # (or a zero: the value of every absent item and default, and of many a score)
            return lit.nested and (float(v) == 0 or any(abs(float(v) - x) <= 1e-9 * max(1.0, abs(x)) for x in own_inputs))
        return True

    nums = [lit for lit in lits if _is_num(lit.value) and allowed(lit)]
    flags = [lit for lit in lits if isinstance(lit.value, bool)]
    unset = [lit for lit in _none_literals(code)]
    options = _option_strings(code)
    strs = [lit for lit in lits if isinstance(lit.value, str)]
    singles: list[list[tuple[Literal, Any]]] = []
    singles += [[(lit, _numeric_perturbations(lit.value)[0])] for lit in nums]
    singles += [[(lit, not lit.value)] for lit in flags]
    for lit in strs:
        shifted = _shift_date(lit.value)
        if shifted:
            singles.append([(lit, shifted)])
    singles += [[(lit, o)] for lit in strs if lit.value in options for o in options if o != lit.value][:12]
    singles += [[(lit, _numeric_perturbations(lit.value)[1])] for lit in nums]
    joint: list[list[tuple[Literal, Any]]] = []
    togglable = flags + unset
    if togglable:
        for setting in (True, False):
            base = [(lit, setting) for lit in togglable]
            joint.append(base)
            for depth in range(2):
                joint += [base + [(lit, _numeric_perturbations(lit.value)[depth])] for lit in nums]
    deeper = [[(lit, _numeric_perturbations(lit.value)[d])] for d in (2, 3) for lit in nums]
    return singles + joint + deeper


def _none_literals(code: str) -> list[Literal]:
    """``None`` values of top-level assignments (an input not given), as togglable flags."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    raw = code.encode("utf-8")
    starts = [0]
    for line in raw.split(b"\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    out: list[Literal] = []
    for st in _top_statements(tree.body):
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and isinstance(st.value, ast.Dict):
            for v in st.value.values:
                if isinstance(v, ast.Constant) and v.value is None and v.end_col_offset is not None:
                    out.append(Literal(starts[v.lineno - 1] + v.col_offset, starts[v.end_lineno - 1] + v.end_col_offset,
                                       None, False))
    return out


@dataclass
class Job:
    """One "does this program compute this value?" question."""

    code: str
    truth: Any
    grounded: Any  # predicate: is a number in an earlier tool result?
    own_inputs: list[float] = field(default_factory=list)
    tol: float | None = None  # how close a printed number must be to ``truth`` (default: rel_tol)
    ok: bool = False
    why: str = ""
    trials: list[list[tuple[Literal, Any]]] | None = None
    line: int | None = None  # the value's printed line, counted from the end
    tried: int = 0


def computes_many(jobs: list[Job], runner: Any = None, rel_tol: float = 0.01, max_runs: int = 24,
                  rounds: tuple[int, ...] = (4, 20)) -> list[Job]:
    """Answer every job (``ok``, ``why``): re-run each program as recorded, then with its inputs
    varied (``perturbations``) until the line that printed the value no longer shows it. All jobs'
    runs of a round go to the sandbox as one batch."""
    runner = runner or default_runner()
    live: list[Job] = []
    for j in jobs:
        j.trials = perturbations(j.code, j.truth, j.grounded, j.own_inputs, rel_tol)
        if j.trials is None:
            j.why = "the program does not parse"
        elif not j.trials:
            j.why = "the program has no input (a number from a tool result, a flag or an option) to vary"
        else:
            j.trials = j.trials[:max_runs]
            live.append(j)
    first = True
    for n in rounds:
        if not live:
            break
        batch: list[str] = []
        plan: list[tuple[Job, list[str]]] = []
        for j in live:
            codes = [_splice(j.code, e) for e in j.trials[j.tried:j.tried + n]]
            j.tried += len(codes)
            plan.append((j, codes))
            batch += ([j.code] if first else []) + codes
        outs = dict(zip(batch, runner.run_many(batch)))
        nxt: list[Job] = []
        for j, codes in plan:
            if first:
                base = outs[j.code]
                if base is None:
                    j.why = "the program fails when re-run"
                    continue
                j.line = _value_line(base, j.truth, rel_tol if j.tol is None else j.tol)
                if j.line is None:
                    j.why = "re-run, the program does not print the value"
                    continue
            for c in codes:
                out = outs[c]
                if out is None:
                    continue
                ls = _lines(out)
                if len(ls) <= j.line or not shows_value([ls[len(ls) - 1 - j.line]], j.truth, rel_tol if j.tol is None else j.tol):
                    j.ok, j.why = True, ""
                    break
            if not j.ok:
                j.why = "varying the program's inputs never changes the printed value"
                if j.tried < len(j.trials):
                    nxt.append(j)
        live, first = nxt, False
    return jobs


def computes(code: str, truth: Any, grounded: Any = lambda x: True, rel_tol: float = 0.01, runner: Any = None,
             own_inputs: list[float] = ()) -> tuple[bool, str]:
    """Does ``code`` derive ``truth`` from its inputs? (ok, why not); see ``computes_many``."""
    (j,) = computes_many([Job(code, truth, grounded, list(own_inputs))], runner, rel_tol)
    return j.ok, j.why


# -- the verifier -----------------------------------------------------------------------------------
@dataclass
class _Ctx:
    task: Task
    traj: Trajectory
    rel_tol: float
    name_threshold: float
    runner: Any
    calls: list[ToolCallRecord] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # observation text of each call ("" when it failed)
    grounds: Any = None  # _Grounds


def _alt_numbers(value: Any, fld: str | None) -> list[float]:
    """The numbers an input value takes in its own and other units (1.4 mg/dL -> 1.4, 123.8 umol/L ...)."""
    from calcmate.scoring.metrics import _analyte

    q = parse_number(value) if not isinstance(value, bool) else None
    if q is None:
        return []
    v, unit = q
    out = [float(v)]
    if unit:
        out += [a * float(v) + b for a, b in _unit_maps(unit, _analyte(fld))]
    return out


@functools.lru_cache(maxsize=4096)
def _unit_maps(unit: str, analyte: str | None) -> tuple[tuple[float, float], ...]:
    """Every other unit of the EA evidence search as an affine map ``a * v + b`` from ``unit``
    (conversions are linear, temperatures affine), so each (unit, analyte) is worked out once."""
    from calcmate.scoring.metrics import _ALT_UNITS
    from calcmate.units import UnitError, convert

    if re.fullmatch(r"(?i)\s*(points?|pts?|score)\s*", unit):
        return ()
    out: list[tuple[float, float]] = []
    for alt in _ALT_UNITS:
        try:
            b = float(convert(0.0, unit, alt, analyte))
            a = float(convert(1.0, unit, alt, analyte)) - b
        except (UnitError, ValueError, TypeError, ZeroDivisionError):
            continue
        out.append((a, b))
    return tuple(out)


def _near(sorted_nums: list[float], x: float, rel: float = 0.005) -> bool:
    tol = max(rel * abs(x), 1e-6)
    j = bisect.bisect_left(sorted_nums, x - tol)
    return j < len(sorted_nums) and sorted_nums[j] <= x + tol


class _Grounds:
    """Numbers shown by the tool results, call by call, for "is this value in an earlier result?"."""

    def __init__(self, ctx: "_Ctx"):
        self.per_call = []
        for t in ctx.texts:
            flat = t.replace(",", "")
            self.per_call.append(sorted({float(x) for x in _NUM.findall(flat)} | {float(x) for x in _UNSIGNED.findall(flat)}))
        # a ground-truth input given in one unit and shown in another: grounded in every unit,
        # from the first call whose result shows it in any of them
        self.converted: list[tuple[int, list[float]]] = []
        for a in ctx.task.calculator_answers:
            for inp in a.inputs:
                alts = _alt_numbers(inp.value, inp.field)
                if len(alts) < 2:
                    continue
                first = next((i for i, nums in enumerate(self.per_call) if any(_near(nums, x, 0.01) for x in alts)), None)
                if first is not None:
                    self.converted.append((first, sorted(alts)))

    def before(self, i: int):
        def grounded(x: Any) -> bool:
            xs = {float(x), abs(float(x))}  # a minus sign may be a Unicode one, or a column's sense
            return any(_near(n, y) for n in self.per_call[:i] for y in xs) or \
                any(f < i and _near(alts, y) for f, alts in self.converted for y in xs)

        return grounded


def assign_names(preds: list[str], truths: list[str], threshold: float = 85.0) -> dict[int, int]:
    """truth index -> prediction index: exact (normalised) names first, then the evaluator's greedy
    fuzzy matching for the rest. Token-set similarity scores "Urine Anion Gap" 100 against "Anion
    Gap", so without the exact pass two such entries can be matched crosswise."""
    out: dict[int, int] = {}
    used: set[int] = set()
    for ti, t in enumerate(truths):
        pi = next((pi for pi, p in enumerate(preds) if pi not in used and _norm(p) == _norm(t)), None)
        if pi is not None:
            out[ti] = pi
            used.add(pi)
    rest_t = [ti for ti in range(len(truths)) if ti not in out]
    rest_p = [pi for pi in range(len(preds)) if pi not in used]
    for a, b in match_names([preds[pi] for pi in rest_p], [truths[ti] for ti in rest_t], threshold).items():
        out[rest_t[a]] = rest_p[b]
    return out


def verify(task: Task, traj: Trajectory, rel_tol: float = 0.01, name_threshold: float = 85.0,
           runner: Any = None) -> Verdict:
    """Check a trajectory against its synthesized task's ground truth (see the module docstring).
    ``runner`` re-runs programs (default: the sandbox pool, memoised)."""
    ctx = _Ctx(task, traj, rel_tol, name_threshold, runner or default_runner(), list(traj.tool_calls))
    ctx.texts = ["" if _failed(c) else observation_text(c) for c in ctx.calls]
    ctx.grounds = _Grounds(ctx)
    issues: list[Issue] = []
    plan = task.plan or {}
    truths = task.calculator_answers
    items = traj.final_answer or []
    if not traj.finished or not items:
        issues.append(Issue("not_finished", f"no structured final answer (stop: {traj.stop_reason or 'none'})"))
    # final answer: every executed calculator, right values, each with its value
    assign = assign_names([i.calculator for i in items], [a.name for a in truths], name_threshold)
    for ti, a in enumerate(truths):
        pi = assign.get(ti)
        if pi is None:
            if items:
                issues.append(Issue("incomplete", f"final answer lacks {a.name}"))
            continue
        if items[pi].value is None or not str(items[pi].value).strip():
            issues.append(Issue("answer_omits_value", f"the final answer's {a.name} entry has no value"))
        if not item_matches(items[pi], a.final_answer, rel_tol):
            issues.append(Issue("wrong_value", f"{a.name}: answered {items[pi].value!r}, registry value {a.final_answer!r}"))
    # computed by a program that derives the value from its inputs
    computed_at = _check_computed(ctx, issues)
    # inputs reached the agent through tool results
    sql_ev = _Evidence(_results(traj, SQL_TOOLS))
    any_ev = _Evidence(_results(traj, SQL_TOOLS + PYTHON_TOOLS))
    for a in truths:
        for inp in a.inputs:
            fed = str(getattr(inp, "source", "") or "").startswith("calculator:")
            ev = any_ev if fed else sql_ev
            if not ev.contains(inp.value, inp.field):
                issues.append(Issue("input_not_retrieved", f"{a.name}: {inp.field} = {inp.value!r} is in no "
                                    f"{'tool' if fed else 'SQL'} result"))
    _check_grounding(ctx, issues)
    _check_branches(ctx, items, assign, issues)
    _check_plan(ctx, items, computed_at, issues)
    return Verdict(not issues, issues)


def _check_computed(ctx: _Ctx, issues: list[Issue]) -> dict[int, int]:
    """not_computed per calculator; returns {truth index: index of the call that computed it}.
    Up to 3 candidate programs per calculator (those that name it first, then the latest), one
    sandbox batch per round of candidates."""
    done: dict[int, int] = {}
    cands: dict[int, list[int]] = {}
    own: dict[int, list[float]] = {}
    shown: dict[int, Any] = {}
    truths = ctx.task.calculator_answers
    names = [_norm(a.name) for a in truths]
    answered = _answered_values(ctx)
    for ti, a in enumerate(truths):
        # the value the agent reports (shown as printed, within 0.1%), else the registry's (within
        # rel_tol): a program printing a near value of another calculator does not count, and a
        # value computed right but reported wrong is a wrong value, not an uncomputed one
        options = ([(answered[ti], _SHOWN_TOL)] if ti in answered else []) + [(a.final_answer, ctx.rel_tol)]
        for value, tol in options:
            cs = []
            for i, c in enumerate(ctx.calls):
                if c.tool not in PYTHON_TOOLS or not ctx.texts[i] or not shows_value([ctx.texts[i]], value, tol):
                    continue
                head = _header_names(_code(c))
                if head and head != names[ti] and head in names:
                    continue  # a program that says it computes another of the task's calculators
                cs.append(i)
            if cs:
                break
        if not cs:
            issues.append(Issue("not_computed", f"no run_python result shows the value of {a.name}"))
            continue
        key = names[ti]
        cs.sort(key=lambda i: (f" {key} " not in f" {_norm(_code(ctx.calls[i])[:400])} ", -i))
        cands[ti], shown[ti] = cs[:3], (value, tol)
        own[ti] = [x for inp in a.inputs for v in (inp.value, getattr(inp, "score", None)) if v is not None
                   for x in _alt_numbers(v, inp.field)[:1]]
    why: dict[int, str] = {}
    for r in range(3):
        jobs = {ti: Job(_code(ctx.calls[cs[r]]), shown[ti][0], ctx.grounds.before(cs[r]), own[ti], tol=shown[ti][1])
                for ti, cs in cands.items() if ti not in done and len(cs) > r}
        if not jobs:
            break
        computes_many(list(jobs.values()), ctx.runner, ctx.rel_tol)
        for ti, j in jobs.items():
            if j.ok:
                done[ti] = cands[ti][r]
            elif ti not in why:
                why[ti] = j.why
    for ti in cands:
        if ti not in done:
            issues.append(Issue("not_computed", f"{ctx.task.calculator_answers[ti].name}: {why.get(ti, '')}"))
    return done


_SHOWN_TOL = 0.001  # a reported value and the printed one it copies: equal but for rounding


def _answered_values(ctx: _Ctx) -> dict[int, Any]:
    """{truth index: the value the final answer reports for it}, where it reports one."""
    items = ctx.traj.final_answer or []
    out: dict[int, Any] = {}
    assign = assign_names([i.calculator for i in items], [a.name for a in ctx.task.calculator_answers], ctx.name_threshold)
    for ti, pi in assign.items():
        v = items[pi].value
        if v is None or not str(v).strip():
            continue
        if isinstance(v, str) and isinstance(ctx.task.calculator_answers[ti].final_answer, (int, float)):
            q = parse_number(v)
            v = q[0] if q is not None else v
        out[ti] = v
    return out


def _code(c: ToolCallRecord) -> str:
    code = c.arguments.get("code", "")
    return code if isinstance(code, str) else ""


def _check_grounding(ctx: _Ctx, issues: list[Issue]) -> None:
    """ungrounded_input: a number a program's top-level assignments hold that no earlier tool
    result shows (in any unit an input of the task takes)."""
    for i, c in enumerate(ctx.calls):
        if c.tool not in PYTHON_TOOLS or not ctx.texts[i]:
            continue
        lits = data_literals(_code(c)) or []
        nums = [lit for lit in lits if lit.checked and isinstance(lit.value, (int, float)) and not isinstance(lit.value, bool)]
        if not nums:
            continue
        grounded = ctx.grounds.before(i)
        bad = [lit.value for lit in nums if not grounded(lit.value)]
        if bad:
            issues.append(Issue("ungrounded_input", f"run_python call {c.id}: {bad[:5]} appear in no earlier tool result"))


def _as_number(v: Any) -> Any:
    if isinstance(v, str):
        m = _NUM.search(v.replace(",", ""))
        if m and not re.search(r"[A-Za-z]{3,}", v):
            return float(m.group())
    return v


def _calc(calc_id: str):
    from calcmate.calculators.registry import registry

    return registry().find(calc_id)


def _calc_name(calc_id: str) -> str | None:
    c = _calc(calc_id)
    return c.name if c else None


def _header_names(code: str) -> str:
    """The first comment line of a program (generated programs name their calculator there)."""
    for ln in code.splitlines():
        if ln.strip():
            return _norm(ln.lstrip("# ")) if ln.lstrip().startswith("#") else ""
    return ""


def _check_branches(ctx: _Ctx, items: list[Any], assign: dict[int, int], issues: list[Issue]) -> None:
    task, truths, nt = ctx.task, ctx.task.calculator_answers, ctx.name_threshold
    by_name = {_norm(a.name): a for a in truths}
    answered = [i.calculator for i in items]
    for bd in (task.plan or {}).get("branches", []):
        b = branch_from_dict(bd)
        taken = bd.get("taken")
        if bd.get("decider_value") is not None and b.arm(bd["decider_value"]) != taken:
            issues.append(Issue("wrong_branch", f"plan says {taken!r} but the registry value {bd['decider_value']!r} selects {b.arm(bd['decider_value'])!r}"))
        dec = next((ti for ti, a in enumerate(truths) if getattr(a, "calculator_id", None) == b.decider), None)
        if dec is not None:
            # the entry matched to the decider in the one-to-one assignment ("Urine Anion Gap" is a
            # perfect token-set match for "Anion Gap" too)
            dec_truth, hit = truths[dec], assign.get(dec)
            if hit is not None and b.arm(_as_number(items[hit].value)) != taken:
                issues.append(Issue("wrong_branch", f"answered {dec_truth.name} = {items[hit].value!r}, which selects "
                                    f"the {b.arm(_as_number(items[hit].value))!r} arm, but {taken!r} was taken"))
        skipped = b.else_ if taken == "then" else b.then
        skipped_names = [n for n in (_calc_name(i) for i in skipped) if n and _norm(n) not in by_name]
        # only answers left over after matching the executed calculators can name a skipped one, so a
        # close name of an executed calculator ("Delta Ratio" in "Albumin Corrected Delta Ratio") is not blamed
        leftover = [n for i, n in enumerate(answered) if i not in set(assign.values())]
        blamed = {skipped_names[idx] for idx in match_names(leftover, skipped_names, nt)}
        # an entry matched to an executed calculator that names a skipped one better ("Estimated Due
        # Date" is a fair match for "Estimated Date of Conception", and an exact one for itself)
        by_item = {pi: ti for ti, pi in assign.items()}
        for pi, n in enumerate(answered):
            if pi not in by_item:
                continue
            own = name_score(n, truths[by_item[pi]].name)
            for sn in skipped_names:
                if name_score(n, sn) > own:
                    blamed.add(sn)
        for sn in sorted(blamed):
            issues.append(Issue("wrong_branch", f"final answer includes {sn}, from the arm not taken"))
        # a program for a calculator of the arm not taken (generated programs name theirs first)
        for c in ctx.calls:
            if c.tool in PYTHON_TOOLS:
                head = _header_names(_code(c))
                hit = next((n for n in skipped_names if head and head == _norm(n)), None)
                if hit:
                    issues.append(Issue("wrong_branch", f"run_python call {c.id} computes {hit}, from the arm not taken"))


_PLAN_LINE = re.compile(r"^\s*(?:step\s*)?\d+[.):]\s*(.+)$", re.I | re.M)


def plan_text(task: Task, traj: Trajectory) -> str:
    """The plan the trajectory states: the first assistant turn's text when it holds a numbered
    plan (the plan opens the first tool-calling turn), else the task's planning header (exported
    as the first assistant turn)."""
    first = next((m for m in traj.messages if m.get("role") == "assistant"), None)
    text = str((first or {}).get("content") or "")
    if len(_PLAN_LINE.findall(text)) >= 2:
        return text
    return str((task.plan or {}).get("header") or "")


def _fetched(ctx: _Ctx, calc: Any, name: str) -> bool:
    """Was this calculator's reference looked up (a fetch naming it, by URL or title)?"""
    key = _norm(name)
    cid = getattr(calc, "id", None)
    for i, c in enumerate(ctx.calls):
        if c.tool != "fetch" or not ctx.texts[i]:
            continue
        url = str(c.arguments.get("url", ""))
        if cid and re.search(rf"(?<![a-z0-9_]){re.escape(cid)}(?![a-z0-9_])", url.lower()):
            return True
        if key and f" {key} " in f" {_norm(ctx.texts[i][:600])} ":
            return True
    return False


def _check_plan(ctx: _Ctx, items: list[Any], computed_at: dict[int, int], issues: list[Issue]) -> None:
    """plan_not_followed: a listed calculator never run (and not on the arm not taken), a reference
    lookup the plan promised and skipped, or a feeding calculator computed after the one it feeds."""
    from calcmate.calculators.registry import registry

    task, truths = ctx.task, ctx.task.calculator_answers
    plan = task.plan or {}
    text = plan_text(task, ctx.traj)
    not_taken: set[str] = set()
    for bd in plan.get("branches", []):
        b = branch_from_dict(bd)
        not_taken |= set(b.else_ if bd.get("taken") == "then" else b.then)
    executed_names = [a.name for a in truths] + [i.calculator for i in items]
    # 1. every calculator a numbered plan line leads with was run, or is on the arm not taken
    reg = registry()
    for line in _PLAN_LINE.findall(text):
        head = re.split(r"[:\u2014]| - ", line, maxsplit=1)[0].strip().strip("*_` ").strip()
        if not head or re.match(r"(?i)branch\b", head):
            continue
        calc = reg.find(head)
        if calc is None or calc.id in not_taken:
            continue
        if not match_names(executed_names, [calc.name], ctx.name_threshold):
            issues.append(Issue("plan_not_followed", f"the plan lists {calc.name}, which was never run"))
    # 2. each executed calculator's reference was looked up, when the plan says so
    if re.search(r"(?i)\bfetch|\breference", text):
        for a in truths:
            calc = reg.find(getattr(a, "calculator_id", None) or a.name) or reg.find(a.name)
            if not _fetched(ctx, calc, a.name):
                issues.append(Issue("plan_not_followed", f"the reference of {a.name} was never fetched"))
    # 3. a calculator feeding another is computed before it
    ids = {getattr(a, "calculator_id", None): ti for ti, a in enumerate(truths)}
    for dst, feeds in (plan.get("fed") or {}).items():
        for src in set((feeds or {}).values()):
            d, s = ids.get(dst), ids.get(src)
            if d in computed_at and s in computed_at and computed_at[s] > computed_at[d]:
                issues.append(Issue("plan_not_followed", f"{truths[d].name} was computed before {truths[s].name}, "
                                    "whose result it uses"))
