"""Measure a synthesized data set: ``python -m calcmate.synth.audit DIR``.

Reads what ``data_gen/synthesize.py`` wrote under DIR (``dataset/train.jsonl``, ``tasks/tasks*.jsonl``,
``trajectories/trajectories*.jsonl``), prints a table and writes ``DIR/audit.json``. Every figure the
exported dataset can give is computed from the dataset itself (the rows a trainer reads), and again
from the trajectory records where those exist, so an export step that hides or adds something shows
up as a difference between the two columns. Task-level figures (questions, calculators, pathways,
contradictions) come from the task records. Each metric, its definition and its target are in
``docs/synthesis-audit.md`` and in ``METRICS`` below; targets are the ones of issue 12.

Checks owned by other modules are imported lazily and reported as ``null`` with a reason when they
are missing: ``calcmate.synth.physiology.physiology_violations``, ``calcmate.synth.consistency.
contradictions`` and the pathway checker of ``calcmate.synth.pathways``.

Both tool-observation formats are read: the official MedMCP-Calc ones (``run_read_only_sql`` JSON
``[{"sql_id", "result"}]``, "SQL Execution Error: ...", ``run_python`` "Output:\\n...") and the older
CalcMate ones (``run_sql`` pipe tables, "Error: ..."); native (``tool_calls``) and react_json renders.
"""

from __future__ import annotations

import argparse
import ast
import glob
import importlib
import json
import math
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from calcmate.calculators.spec import normalize_name

OFFICIAL_TOOLS = ("run_read_only_sql", "list_tables", "describe_tables", "search", "fetch", "run_python")
SQL_TOOLS = ("run_read_only_sql", "run_sql")
CHARS_PER_TOKEN = 3.6  # the estimate when no tokenizer is given (as calcmate.synth.export)
DEFAULT_MAX_LENGTH = 150_000  # the paper's SFT max length (configs/calcmate-4b.yaml)
SQL_SHAPE_WINDOW = 300  # SQL shapes are reported per this many trajectories
BENCHMARK_QUESTION_WORDS = 429  # mean words of a MedMCP-Calc fuzzy_question (issue 12)
NOT_AVAILABLE = "checker not available"

# what each metric means and the target of issue 12 (None: reported, no target)
METRICS: dict[str, tuple[str, str | None]] = {
    "lone_assistant_turns": ("assistant turns without a tool call, other than the final answer", "0"),
    "non_official_tool_calls": ("tool calls (and tool schemas) named outside the official six", "0"),
    "thought_top6_share": ("share of tool-turn thoughts that are one of the 6 most common after normalising", "<= 0.15"),
    "thought_distinct_ratio": ("distinct normalised tool-turn thoughts / tool-turn thoughts", ">= 0.30"),
    "question_distinct_openings": ("distinct first-8-word openings (numbers masked) / questions", ">= 0.90"),
    "question_words": ("words per question (the benchmark's mean: 429)", None),
    "question_name_debris": ("questions with name-scrubbing debris ('this measure')", "0"),
    "questions_naming_a_calculator": ("questions that contain a registry calculator name or alias", "0"),
    "questions_copying_reference": ("questions sharing an 8-word run with a registry reference text", "0"),
    "sql_shapes_per_300": ("distinct SQL shapes (identifiers, strings, numbers masked) per 300 trajectories", ">= 50"),
    "sql_errors": ("SQL calls whose observation is an error", None),
    "sql_empty": ("SQL calls that returned no rows", None),
    "search_canonical_name_share": ("search queries that are exactly a calculator's registry name or alias", None),
    "fetch_top_hit_share": ("fetches of the top hit of the preceding search", None),
    "parallel_turn_share": ("tool-calling turns with more than one call", None),
    "recovery_share": ("trajectories with a failed or empty call followed by a corrected call of the same tool", "0.10-0.20"),
    "grounding_violations": ("run_python inputs found in no earlier SQL/Python result and not declared a default", "0"),
    "boolean_contradicts_record": ("run_python yes/no inputs that contradict a 'label: yes/no' line of an earlier result", "0"),
    "declared_defaults": ("run_python inputs declared as defaults ('not given, default ...')", None),
    "defaults_visible_in_results": ("declared defaults whose field an earlier result shows", "0"),
    "inputs_not_most_recent": ("numeric inputs read from a non-latest row of a time series", None),
    "physiological_violations": ("SQL-returned values outside the physiological limits table", "0"),
    "implausible_demographics": ("sex/race/ethnicity columns holding yes/no values", "0"),
    "contradictions": ("cross-calculator contradictions within a task (consistency checker)", "0"),
    "scenario_calculator_share": ("mean share of a task's calculators in its taxonomy scenario's calculator list", None),
    "off_pathway_share": ("share of calculators off the scenario's pathways (pathway checker)", "<= 0.10"),
    "polarity_errors": ("branches that reverse a calculator's polarity (pathway checker)", "0"),
    "population_mismatches": ("calculators applied outside their population (pathway checker)", "0"),
    "calculators_per_task": ("calculators per task", ">= 8"),
    "unique_calculators": ("distinct registry calculators over the run", "= registry size"),
    "plan_token_share": ("plan tokens (first assistant turn's text) / all tokens", "0.05-0.12"),
    "tokens_per_row": ("tokens per row under the chat template (p50/p95/max)", None),
    "rows_over_max_length": ("rows longer than --max-length", "0"),
    "final_prose_distinct_ratio": ("distinct normalised final-answer prose (outside the block) / answers", None),
    "final_closing_distinct_ratio": ("distinct normalised closing paragraphs (the one before the block) / answers", None),
    "verifier_rejections": ("share of attempted tasks the verifier rejected", None),
}


# -- reading a run ------------------------------------------------------------------------------------
def _jsonl(pattern: str) -> list[dict[str, Any]]:
    """Records of every file matching ``pattern``; the last record of a key wins; torn lines skipped."""
    out: list[dict[str, Any]] = []
    for f in sorted(glob.glob(pattern)):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
    return out


def _by_key(records: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {r[key]: r for r in records if key in r}


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    result: str | None = None
    is_error: bool | None = None  # the record's flag, where known (trajectories)
    turn: int = 0

    @property
    def args_key(self) -> str:
        return json.dumps(self.args, sort_keys=True, ensure_ascii=False, default=str)

    @property
    def failed(self) -> bool:
        return bool(self.is_error) or is_error_text(self.result or "", self.name)

    @property
    def empty(self) -> bool:
        return not self.failed and is_empty_result(self.name, self.result or "")


@dataclass
class Episode:
    """One trajectory as a model sees it: turns, calls with their observations, plan and answer."""

    id: str
    question: str = ""
    plan: str | None = None  # the text of the first assistant turn
    thoughts: list[str] = field(default_factory=list)  # texts of the other tool-calling turns
    calls: list[Call] = field(default_factory=list)
    call_turns: list[int] = field(default_factory=list)  # calls per tool-calling turn
    lone_turns: int = 0
    final_text: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        v = json.loads(raw or "{}")
        return v if isinstance(v, dict) else {"_": v}
    except (json.JSONDecodeError, TypeError):
        return {"_raw": str(raw)}


def _react(content: str) -> dict[str, Any] | None:
    """A react_json assistant turn (``{"thought", "action"}`` / ``{"thought", "answer"}``), else None."""
    s = (content or "").strip()
    if not s.startswith("{"):
        return None
    try:
        d = json.loads(s)
    except json.JSONDecodeError:
        return None
    return d if isinstance(d, dict) and ("thought" in d or "action" in d or "answer" in d) else None


def episode_from_messages(eid: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                          errors: dict[str, bool] | None = None) -> Episode:
    """Parse native (``tool_calls`` + ``role: tool``) or react_json (JSON turns + "Result: ..." user turns)."""
    ep = Episode(eid, messages=messages, tools=tools or [])
    by_id: dict[str, Call] = {}
    pending: list[Call] = []  # react_json calls awaiting their "Result:" user turn
    assistant_seen = False
    users = 0
    asst = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    last_asst = asst[-1] if asst else -1
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content") or ""
        if role == "user":
            users += 1
            if users == 1:
                ep.question = content
            elif pending and content.startswith("Result:"):
                pending.pop(0).result = content[len("Result:"):].strip()
            continue
        if role == "tool":
            c = by_id.get(m.get("tool_call_id", ""))
            if c is None:  # a result without a matching id: the oldest call still waiting
                c = next((x for x in ep.calls if x.result is None), None)
            if c is not None:
                c.result = content
            continue
        if role != "assistant":
            continue
        text, calls = content, []
        r = _react(content)
        if r is not None:
            text = str(r.get("thought") or "")
            act = r.get("action")
            if isinstance(act, dict):
                calls.append(Call(str(act.get("tool", "")), _args(act.get("arguments", {}))))
            elif "answer" in r:
                text = str(r.get("answer") or "")
        for tc in m.get("tool_calls") or []:
            f = tc.get("function", {})
            c = Call(str(f.get("name", "")), _args(f.get("arguments")))
            if errors is not None and tc.get("id") in errors:
                c.is_error = errors[tc["id"]]
            by_id[tc.get("id", "")] = c
            calls.append(c)
        first = not assistant_seen
        assistant_seen = True
        if first:
            ep.plan = text
        if calls:
            for c in calls:
                c.turn = i
            ep.calls += calls
            ep.call_turns.append(len(calls))
            if r is not None:
                pending += calls
            if not first:
                ep.thoughts.append(text)
        elif i == last_asst:
            ep.final_text = text
        else:
            ep.lone_turns += 1
    return ep


def episode_from_row(row: dict[str, Any]) -> Episode:
    tools = row.get("tools")
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError:
            tools = []
    return episode_from_messages(str(row.get("id", "")), row.get("messages") or [], tools or [])


def episode_from_trajectory(traj: dict[str, Any]) -> Episode:
    errors = {c.get("id"): bool(c.get("is_error")) for c in traj.get("tool_calls") or []}
    ep = episode_from_messages(str(traj.get("task_id", "")), traj.get("messages") or [], None, errors)
    if not ep.calls and traj.get("tool_calls"):  # a record without chat messages: the call records alone
        ep.calls = [Call(c.get("tool", ""), c.get("arguments") or {}, c.get("result"), bool(c.get("is_error")))
                    for c in traj["tool_calls"]]
    return ep


# -- observations -------------------------------------------------------------------------------------
_PY_ERR = re.compile(r"Traceback \(most recent call last\)|^\w*Error: ", re.M)


def is_error_text(text: str, tool: str = "") -> bool:
    """A failed call, by its observation (official error strings, CalcMate's "Error: ...", a traceback)."""
    from calcmate.tools.official import is_error_text as official_error

    t = (text or "").lstrip()
    if official_error(t) or t.startswith("Error:"):
        return True
    if tool == "run_python" and "Errors/Warnings:" in t:
        return bool(_PY_ERR.search(t.split("Errors/Warnings:", 1)[1]))
    return False


def sql_rows(text: str) -> list[dict[str, Any]] | None:
    """Rows of a SQL observation: official JSON, or a CalcMate pipe table; None if neither."""
    from calcmate.tools.official import sql_rows as official_rows

    rows = official_rows(text)
    if rows is not None:
        return rows
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if len(lines) < 2 or " | " not in lines[0] and not re.fullmatch(r"\(\d+ rows?\)", lines[-1].strip()):
        return None
    head = [c.strip() for c in lines[0].split(" | ")]
    out = []
    for ln in lines[1:]:
        if ln.startswith("[truncated") or re.fullmatch(r"\(\d+ rows?\)", ln.strip()):
            continue
        cells = [c.strip() for c in ln.split(" | ")]
        if len(cells) == len(head):
            out.append(dict(zip(head, cells)))
    return out


def is_empty_result(tool: str, text: str) -> bool:
    from calcmate.tools.official import NO_SEARCH_RESULTS, PY_NO_OUTPUT, SQL_EMPTY

    t = (text or "").strip()
    if tool in SQL_TOOLS:
        if SQL_EMPTY in t or "returned no rows" in t or re.search(r"^\(0 rows\)$", t, re.M):
            return True
        rows = sql_rows(t)
        return rows is not None and not rows and t.startswith("[")
    if tool == "search":
        return t in (NO_SEARCH_RESULTS, "[]", "") or t.lower().startswith("no results")
    if tool == "run_python":
        return t in (PY_NO_OUTPUT, "")
    if tool == "list_tables":
        return t.startswith("No tables found") or t == "no tables are visible"
    return not t


def evidence_text(call: Call) -> str:
    """An observation as evidence: SQL rows as ``column: value`` lines (no ``sql_id``), Python output
    without its "Output:" header; other tools as they are."""
    t = call.result or ""
    if call.name in SQL_TOOLS:
        rows = sql_rows(t)
        if rows is not None:
            return "\n".join("; ".join(f"{k}: {v}" for k, v in r.items()) for r in rows)
    if call.name == "run_python":
        return re.sub(r"^\s*Output:\s*\n", "", t)
    return t


# -- calculator names and normalisation ----------------------------------------------------------------
_NAME_STOP = {"must", "bed", "ratio", "map", "si", "ag", "ga", "edd", "age", "sex", "score"}
_QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|“[^”\n]{0,200}”|‘[^’\n]{0,200}’|(?<![A-Za-z])'[^'\n]{0,200}'(?![A-Za-z])|`[^`\n]{0,200}`")
_NUMTOK = re.compile(r"^\d+$")


@lru_cache(maxsize=1)
def _registry_names() -> frozenset[tuple[str, ...]]:
    from calcmate.calculators.registry import registry

    reg = registry()
    names = set(reg.names())
    for c in reg:
        names.add(normalize_name(c.name))
    names |= set(reg.bundles)
    return frozenset(tuple(n.split()) for n in names if n and n not in _NAME_STOP and len(n) >= 3)


class NameMasker:
    """Replaces calculator names (registry names and aliases, plus extra names) in normalised token
    sequences, longest first."""

    def __init__(self, extra: Iterable[str] = ()):
        names = set(_registry_names())
        names |= {tuple(normalize_name(x).split()) for x in extra if normalize_name(x)}
        self.names = names
        self.maxlen = max((len(n) for n in names), default=1)
        self.firsts = {n[0] for n in names}

    def mask(self, tokens: list[str], repl: str = "<calc>") -> tuple[list[str], int]:
        out, i, hits = [], 0, 0
        while i < len(tokens):
            if tokens[i] in self.firsts:
                for L in range(min(self.maxlen, len(tokens) - i), 0, -1):
                    if tuple(tokens[i:i + L]) in self.names:
                        out.append(repl)
                        i += L
                        hits += 1
                        break
                else:
                    out.append(tokens[i])
                    i += 1
            else:
                out.append(tokens[i])
                i += 1
        return out, hits


def normalise_thought(text: str, names: Iterable[str] = (), masker: NameMasker | None = None) -> str:
    """Quoted strings -> <q>, calculator names (registry + ``names``) -> <calc>, numbers -> <num>
    (a run of numbers is one <num>), case and punctuation folded."""
    m = masker or NameMasker(names)
    t = _QUOTED.sub(" qqquotedqqq ", text or "")
    toks, _ = m.mask(normalize_name(t).split())
    out: list[str] = []
    for tok in toks:
        tok = "<q>" if tok == "qqquotedqqq" else ("<num>" if _NUMTOK.match(tok) else tok)
        if tok == "<num>" and out and out[-1] == "<num>":
            continue
        out.append(tok)
    return " ".join(out)


# -- questions ----------------------------------------------------------------------------------------
_WRAPPER = re.compile(r"^I am assessing the patient.*?Show the calculated results\.\s*", re.S)
_DEBRIS = re.compile(r"\bthis (measure|score|calculator|index|tool|rule)\b", re.I)


def strip_wrapper(q: str) -> str:
    """The fuzzy question inside the official harness's patient-id preamble."""
    return _WRAPPER.sub("", q or "", count=1).strip()


def opening(q: str, n: int = 8) -> str:
    toks = ["<num>" if _NUMTOK.match(t) else t for t in normalize_name(q).split()]
    return " ".join(toks[:n])


@lru_cache(maxsize=1)
def _reference_ngrams(n: int = 8) -> frozenset[tuple[str, ...]]:
    from calcmate.calculators.registry import registry

    grams: set[tuple[str, ...]] = set()
    for c in registry():
        r = c.reference
        for text in (r.purpose, r.when_to_use, r.interpretation, r.notes):
            toks = normalize_name(text or "").split()
            grams |= {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}
    return frozenset(grams)


def question_metrics(questions: list[str], masker: NameMasker) -> dict[str, Any]:
    qs = [q for q in questions if q is not None]
    n = len(qs)
    if not n:
        return {"n": 0}
    words = [len(q.split()) for q in qs]
    grams = _reference_ngrams()
    copying = 0
    naming = 0
    for q in qs:
        toks = normalize_name(q).split()
        if any(tuple(toks[i:i + 8]) in grams for i in range(len(toks) - 7)):
            copying += 1
        if masker.mask(toks)[1]:
            naming += 1
    openings = Counter(opening(q) for q in qs)
    return {
        "n": n,
        "distinct_openings": len(openings),
        "distinct_openings_share": round(len(openings) / n, 4),
        "top_openings": openings.most_common(3),
        "words_mean": round(statistics.mean(words), 1),
        "words_median": statistics.median(words),
        "name_debris": sum(bool(_DEBRIS.search(q)) for q in qs),
        "naming_a_calculator": naming,
        "copying_reference": copying,
    }


# -- SQL shapes ---------------------------------------------------------------------------------------
_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)*|<>|<=|>=|!=|::|\|\||\S")
_SQL_KEYWORDS = set("""
select from where and or not in is null order by desc asc limit offset group having join left right inner outer full
cross on as distinct like ilike between case when then else end union all exists with count max min avg sum cast
coalesce lower upper trim nullif any interval true false date timestamp now current_date extract epoch over partition
row_number rank dense_rank first_value last_value lag lead using natural similar to escape filter within
round abs length substring position replace split_part regexp_replace to_number to_char to_date to_timestamp numeric
float text integer int real double precision varchar char boolean date_trunc age greatest least string_agg array_agg
""".split())
_REPEAT = re.compile(r"(?<!\S)(?P<u>(?:\S+ ){0,11}?\S+) (?P<s>,|OR|AND) (?P=u)(?: (?P=s) (?P=u))*(?!\S)")


def sql_shape(query: str) -> str:
    """The query's structure: identifiers -> I, strings -> S, numbers -> N, keywords upper-cased,
    and a repeated list (``I , I , I``, ``x OR x``) written once."""
    out: list[str] = []
    for tok in _SQL_TOKEN.findall(query or ""):
        if tok.startswith("'"):
            out.append("S")
        elif tok.startswith('"'):
            out.append("I")
        elif tok[0].isdigit():
            out.append("N")
        elif tok[0].isalpha() or tok[0] == "_":
            out.append(tok.upper() if tok.lower() in _SQL_KEYWORDS else "I")
        elif tok == ";":
            continue
        else:
            out.append(tok)
    s = " ".join(out)
    while True:
        t = _REPEAT.sub(lambda m: f"{m['u']} {m['s']} ...", s)
        if t == s:
            return s
        s = t


def sql_query(call: Call) -> str:
    a = call.args
    return str(a.get("query") or a.get("sql") or a.get("_raw") or "")


# -- recovery -----------------------------------------------------------------------------------------
def _same_kind(a: str, b: str) -> bool:
    return a == b or (a in SQL_TOOLS and b in SQL_TOOLS)


def recoveries(calls: list[Call], window: int = 4) -> tuple[int, int]:
    """(failures, recovered): a failure is a call whose observation is an error or empty; it is
    recovered when one of the next ``window`` calls is the same tool with different arguments that
    succeeds with a non-empty result (failed retries in between are allowed)."""
    fails = rec = 0
    for i, c in enumerate(calls):
        if not (c.failed or c.empty):
            continue
        fails += 1
        for d in calls[i + 1:i + 1 + window]:
            if _same_kind(d.name, c.name) and d.args_key != c.args_key and not d.failed and not d.empty:
                rec += 1
                break
    return fails, rec


# -- grounding ----------------------------------------------------------------------------------------
_DEFAULT_NOTE = re.compile(r"\b(default|not given|not documented|not recorded|not available|not in the (ehr|record)|assum\w*|missing)\b", re.I)
_YES = {"yes", "true", "present", "positive", "y"}
_NO = {"no", "false", "absent", "negative", "n", "none"}
_SEX = {"m": "male", "male": "male", "man": "male", "f": "female", "female": "female", "woman": "female"}


_UNIT = re.compile(r"^[\w/%°µμ²³⁹⁻¹·.*^ -]{1,20}$")


def _balanced(t: str) -> bool:
    return t.count("(") == t.count(")") and t.count("[") == t.count("]")


@dataclass
class CodeInput:
    """One stated input: ``key = value  # comment``. Comments read like "Weight, kg",
    "Best eye response: Spontaneous" (the recorded text the value was mapped from) or
    "Heart rate: not given, default 80"."""

    key: str
    value: Any
    comment: str = ""

    @property
    def declared_default(self) -> bool:
        return bool(_DEFAULT_NOTE.search(self.comment))

    def readings(self) -> list[tuple[str, str | None, str | None]]:
        """(label, unit, recorded text) candidates, the whole comment first, then split at each ':'."""
        c = self.comment.strip()
        parts = c.split(":")
        cands = [(c, None)] + [(":".join(parts[:j]), ":".join(parts[j:]).strip()) for j in range(len(parts) - 1, 0, -1)]
        out = []
        for label, rec in cands:
            unit = None
            if "," in label:
                head, tail = label.rsplit(",", 1)
                if _UNIT.match(tail.strip()) and _balanced(head) and len(tail.split()) <= 2:
                    label, unit = head, tail.strip()
            label = label.strip()
            if label:
                out.append((label, unit, rec or None))
        out.append((self.key.replace("_", " "), None, None))
        return out


def _const(node: ast.AST) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return True, -node.operand.value
    return False, None


def code_inputs(code: str) -> list[CodeInput] | None:
    """The input values a ``run_python`` program states: top-level ``name = <constant>`` and the
    constant entries of top-level dict literals (``v = {'age': 67, ...}``), each with its line's
    comment. None if the code does not parse."""
    try:
        tree = ast.parse(code or "")
    except (SyntaxError, ValueError):
        return None
    lines = (code or "").splitlines()

    def comment(node: ast.AST) -> str:  # the text after "#" following the value on its last line
        n = getattr(node, "end_lineno", None) or 0
        ln = lines[n - 1] if 0 < n <= len(lines) else ""
        m = re.match(r"[\s,]*#\s*(.*)$", ln[getattr(node, "end_col_offset", 0) or 0:])
        return m.group(1).strip() if m else ""

    out: list[CodeInput] = []
    for st in tree.body:
        if not isinstance(st, (ast.Assign, ast.AnnAssign)) or st.value is None:
            continue
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        name = next((t.id for t in targets if isinstance(t, ast.Name)), None)
        if name is None:
            continue
        ok, v = _const(st.value)
        if ok and not name.isupper() and not name.startswith("_"):
            out.append(CodeInput(name, v, comment(st.value)))
        elif isinstance(st.value, ast.Dict) and not name.startswith("_") and not name.isupper():  # not a constant table
            for k, val in zip(st.value.keys, st.value.values):
                okk, kv = _const(k) if k is not None else (False, None)
                ok, v = _const(val)
                if okk and ok:
                    out.append(CodeInput(str(kv), v, comment(val)))
    return out


class Evidence:
    """What earlier SQL and Python results showed: the scoring module's EA evidence search over their
    text (SQL rows re-rendered as ``col | col`` tables, so its age logic applies), ``label: value``
    facts (columns and "Label: value" lines inside text cells) and time series for the recency check."""

    def __init__(self, calls: list[Call]):
        from calcmate.scoring.metrics import SqlEvidence

        texts: list[str] = []
        self.facts: dict[str, set[str]] = defaultdict(set)  # normalised label -> normalised values
        self.sql_facts: dict[str, set[str]] = defaultdict(set)  # the same, from SQL results only
        self.series: list[list[tuple[str, float]]] = []  # (time, value), one per column/analyte per query
        for c in calls:
            rows = sql_rows(c.result or "") if c.name in SQL_TOOLS else None
            if rows is None:
                t = evidence_text(c)
                texts.append(t)
                self._lines(t)
                continue
            self.series += _series(rows)
            for cols in dict.fromkeys(tuple(r) for r in rows):
                texts.append(" | ".join(cols))
                for r in rows:
                    if tuple(r) == cols:
                        texts.append(" | ".join(re.sub(r"\s*\n\s*", " / ", str(v)) for v in r.values()))
            for r in rows:
                for k, v in r.items():
                    if v is not None:
                        self._fact(k, str(v))
                        self._lines(str(v))
                        self._fact(k, str(v), self.sql_facts)
                        self._lines(str(v), self.sql_facts)
        ev = SqlEvidence.__new__(SqlEvidence)
        ev.raw = "\n".join(texts)
        ev.norm = " " + normalize_name(ev.raw) + " "
        ev.numbers = [float(x) for x in re.findall(r"(?<![\d.])[-+]?\d+(?:\.\d+)?", ev.raw.replace(",", ""))]
        self.ev = ev

    def _fact(self, k: str, v: str, into: dict[str, set[str]] | None = None) -> None:
        k, v = normalize_name(k), normalize_name(v)
        if k and v:
            (self.facts if into is None else into)[k].add(v)

    def _lines(self, text: str, into: dict[str, set[str]] | None = None) -> None:
        for ln in re.split(r"\n|\\n", text):
            parts = ln.split(":")
            for j in range(1, len(parts)):  # "Feature 2: inattention: No" -> "feature 2 inattention" and "inattention"
                for i in range(j):
                    self._fact(":".join(parts[i:j]), parts[-1], into)

    def number(self, v: float, unit: str | None, field_: str) -> bool:
        return self.ev.contains(f"{v:g} {unit}" if unit else v, field_)

    def text(self, s: str, field_: str | None) -> bool:
        key = _SEX.get(normalize_name(s))
        if key is not None:  # "female" read from a gender column holding "F"
            return any(_SEX.get(v) == key for vs in self.facts.values() for v in vs) or self.ev.has_text(s)
        return self.ev.contains(s, field_)

    def fact(self, label: str, sql_only: bool = False) -> set[str] | None:
        """The values an earlier ``label: value`` gave for this field (fuzzy label match)."""
        from rapidfuzz import fuzz, process

        facts = self.sql_facts if sql_only else self.facts
        k = normalize_name(label)
        if not k:
            return None
        if k in facts:
            return facts[k]
        hit = process.extractOne(k, list(facts), scorer=fuzz.ratio, score_cutoff=92)
        return facts[hit[0]] if hit else None


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        return float(str(x).strip())
    except ValueError:
        return None


def _series(rows: list[dict[str, Any]]) -> list[list[tuple[str, float]]]:
    if len(rows) < 2:
        return []
    tkey = next((k for k in rows[0] if re.search(r"time|date", k, re.I)), None)
    if tkey is None:
        return []
    groups: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for r in rows:
        t = str(r.get(tkey) or "")
        if "test_item_name" in r:
            x = _num(r.get("test_result"))
            if x is not None:
                groups[("lab", str(r["test_item_name"]))].append((t, x))
            continue
        for k, v in r.items():
            x = _num(v)
            if k != tkey and x is not None and not re.search(r"_id$|^id$", k):
                groups[("col", k)].append((t, x))
    return [g for g in groups.values() if len({x for _, x in g}) > 1]


def _yes_no(x: str) -> str | None:
    w = x.split()[0] if x.split() else ""
    return "yes" if w in _YES else "no" if w in _NO else None


def check_input(inp: CodeInput, ev: Evidence) -> tuple[str, str]:
    """(verdict, why): verdict is grounded | violation | contradiction | default | default_visible."""
    v = inp.value
    reads = inp.readings()
    facts = [(lab, unit, rec, ev.fact(lab)) for lab, unit, rec in reads]
    if inp.declared_default:
        seen = next((f"{lab}: {sorted(vals)[:3]}" for lab, _, _ in reads[1:-1]  # the comment's labels, not the key
                     if not _DEFAULT_NOTE.search(lab) and (vals := ev.fact(lab, sql_only=True))), None)
        return ("default_visible", f"declared a default but an earlier result gives {seen}") if seen else ("default", "")
    # the value was mapped from recorded text the comment quotes ("Best eye response: Spontaneous" -> 4)
    for lab, _, rec, vals in facts:
        if rec and vals and normalize_name(rec) in vals:
            return "grounded", ""
    if isinstance(v, bool):
        said = {y for _, _, _, vals in facts for x in (vals or ()) if (y := _yes_no(x))}
        if said and ("yes" if v else "no") not in said:
            return "contradiction", f"the record says {sorted(said)}"
        if said or (v and any(ev.ev.has_text(lab) for lab, _, _, _ in facts[:-1] if len(normalize_name(lab)) >= 4)):
            return "grounded", ""
        return "violation", "appears in no earlier result"
    if isinstance(v, (int, float)):
        if any(ev.number(float(v), unit, lab) for lab, unit, _ in reads):
            return "grounded", ""
        return "violation", "appears in no earlier result"
    if any(ev.text(str(v), lab) for lab, _, _ in reads):
        return "grounded", ""
    return "violation", "appears in no earlier result"


def ground_episode(ep: Episode) -> dict[str, Any]:
    """Check each ``run_python`` input against the SQL and Python results that came before it."""
    out = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    names = {"violation": "grounding_violations", "contradiction": "boolean_contradicts_record",
             "default": "declared_defaults", "default_visible": "defaults_visible_in_results", "grounded": "grounded"}
    for i, c in enumerate(ep.calls):
        if c.name != "run_python":
            continue
        inputs = code_inputs(str(c.args.get("code", "")))
        if inputs is None:
            out["unparsed_code"] += 1
            continue
        ev = Evidence([d for d in ep.calls[:i] if (d.name in SQL_TOOLS or d.name == "run_python") and not d.failed])
        for inp in inputs:
            out["inputs"] += 1
            verdict, why = check_input(inp, ev)
            out[names[verdict]] += 1
            if verdict == "default_visible":
                out["declared_defaults"] += 1
            if why:
                examples[names[verdict]].append(f"{ep.id}: {inp.key}={inp.value!r} ({inp.comment}): {why}")
            if verdict == "grounded" and isinstance(inp.value, (int, float)) and not isinstance(inp.value, bool):
                if _latest_of(ev.series, float(inp.value)) is False:
                    out["inputs_not_most_recent"] += 1
                    examples["inputs_not_most_recent"].append(f"{ep.id}: {inp.key}={inp.value!r} is not the latest value")
    return {"counts": dict(out), "examples": dict(examples)}


def _latest_of(series: list[list[tuple[str, float]]], v: float) -> bool | None:
    """True if ``v`` is the latest value of a series holding it; False if it is only an older one;
    None if no multi-valued series holds it."""
    seen = False
    for s in series:
        hit = [t for t, x in s if abs(x - v) <= max(0.005 * abs(v), 1e-9)]
        if not hit:
            continue
        seen = True
        if max(s)[1] == v or abs(max(s)[1] - v) <= max(0.005 * abs(v), 1e-9):
            return True
    return False if seen else None


# -- EHR plausibility ---------------------------------------------------------------------------------
def episode_rows(ep: Episode) -> list[dict[str, Any]]:
    """Every distinct row the episode's SQL calls returned."""
    seen, out = set(), []
    for c in ep.calls:
        if c.name in SQL_TOOLS and not c.failed:
            for r in sql_rows(c.result or "") or []:
                k = json.dumps(r, sort_keys=True, default=str)
                if k not in seen:
                    seen.add(k)
                    out.append(r)
    return out


def implausible_demographics(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        for k, v in r.items():
            if re.search(r"(^|_)(sex|gender|race|ethnicity)$", k, re.I) and normalize_name(v) in _YES | _NO:
                out.append(f"{r.get('patient_id', '?')}: {k} = {v!r}")
    return out


def _lazy(module: str, attr: str) -> tuple[Any, str | None]:
    try:
        m = importlib.import_module(module)
    except Exception as e:  # ImportError, or a module still being written
        return None, f"{NOT_AVAILABLE} ({module}: {type(e).__name__})"
    f = getattr(m, attr, None)
    return (f, None) if callable(f) else (None, f"{NOT_AVAILABLE} ({module}.{attr} missing)")


PATHWAY_CHECKERS = ("coherence_issues", "pathway_issues", "check_task", "task_issues", "check_pathways", "audit_task", "coherence", "check")


def _pathway_checker() -> tuple[Any, str | None]:
    try:
        m = importlib.import_module("calcmate.synth.pathways")
    except Exception as e:
        return None, f"{NOT_AVAILABLE} (calcmate.synth.pathways: {type(e).__name__})"
    for name in PATHWAY_CHECKERS:
        f = getattr(m, name, None)
        if callable(f):
            return f, None
    return None, f"{NOT_AVAILABLE} (calcmate.synth.pathways has none of {', '.join(PATHWAY_CHECKERS)})"


def _field(obj: Any, *words: str) -> Any:
    """The first attribute/key of a checker result whose name contains one of ``words``."""
    keys = list(obj.keys()) if isinstance(obj, dict) else [k for k in dir(obj) if not k.startswith("_")]
    for w in words:  # an exact name first ("population" may be the task's class, not its mismatches)
        if w in keys:
            return obj[w] if isinstance(obj, dict) else getattr(obj, w)
    for w in words:
        for k in keys:
            if w in k.lower():
                return obj[k] if isinstance(obj, dict) else getattr(obj, k)
    return None


def _count(x: Any) -> int:
    if x is None:
        return 0
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return int(x)
    return len(x) if hasattr(x, "__len__") else int(bool(x))


# -- tokens -------------------------------------------------------------------------------------------
class TokenCounter:
    def __init__(self, tokenizer: str | None):
        self.tok = None
        self.name = tokenizer
        if tokenizer:
            from transformers import AutoTokenizer

            self.tok = AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
            if not getattr(self.tok, "chat_template", None):
                raise SystemExit(f"--tokenizer {tokenizer}: the tokenizer has no chat template")

    @property
    def exact(self) -> bool:
        return self.tok is not None

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        from calcmate.synth.export import render_qwen3

        return render_qwen3(messages, tools or None, self.tok)

    def text(self, s: str) -> int:
        if not s:
            return 0
        if self.tok is not None:
            return len(self.tok(s, add_special_tokens=False)["input_ids"])
        return int(round(len(s) / CHARS_PER_TOKEN))


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return 0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


# -- the audit ----------------------------------------------------------------------------------------
def _ratio(a: float, b: float, nd: int = 4) -> float | None:
    return round(a / b, nd) if b else None


def episode_metrics(eps: list[Episode], masker: NameMasker, task_names: dict[str, list[str]],
                    physiology: Any, *, with_rows: bool = True) -> dict[str, Any]:
    """The figures a set of episodes gives (dataset rows or trajectory records alike)."""
    n = len(eps)
    out: dict[str, Any] = {"n": n}
    if not n:
        return out
    # format
    lone = [e.lone_turns for e in eps]
    out["lone_assistant_turns"] = {"total": sum(lone), "per_trajectory": round(sum(lone) / n, 3),
                                   "trajectories_with_any": sum(x > 0 for x in lone)}
    bad = Counter(c.name for e in eps for c in e.calls if c.name not in OFFICIAL_TOOLS)
    schema_bad = Counter(t.get("function", {}).get("name", t.get("name", "")) for e in eps for t in e.tools
                         if t.get("function", {}).get("name", t.get("name", "")) not in OFFICIAL_TOOLS)
    out["non_official_tool_calls"] = {"total": sum(bad.values()), "by_name": dict(bad),
                                      "trajectories_with_any": sum(any(c.name not in OFFICIAL_TOOLS for c in e.calls) for e in eps),
                                      "tool_schemas_outside_official": dict(schema_bad)}
    # thoughts
    norm = []
    empty = 0
    for e in eps:
        names = task_names.get(e.id, [])
        m = masker if not names else NameMasker(names)
        for t in e.thoughts:
            empty += not (t or "").strip()
            norm.append(normalise_thought(t, masker=m))
    cnt = Counter(norm)
    out["thoughts"] = {"n": len(norm), "empty": empty,
                       "top6_share": _ratio(sum(c for _, c in cnt.most_common(6)), len(norm)),
                       "distinct_ratio": _ratio(len(cnt), len(norm)),
                       "top6": [[t, c] for t, c in cnt.most_common(6)]}
    # questions (the user message, the harness wrapper stripped)
    out["questions"] = question_metrics([strip_wrapper(e.question) for e in eps], masker)
    # calls
    sql = [c for e in eps for c in e.calls if c.name in SQL_TOOLS]
    shapes = [sql_shape(sql_query(c)) for c in sql]
    per: list[int] = []
    for k in range(0, n - SQL_SHAPE_WINDOW + 1, SQL_SHAPE_WINDOW):
        per.append(len({sql_shape(sql_query(c)) for e in eps[k:k + SQL_SHAPE_WINDOW] for c in e.calls if c.name in SQL_TOOLS}))
    out["sql"] = {"queries": len(sql), "distinct_shapes": len(set(shapes)),
                  "shapes_per_300": round(statistics.mean(per), 1) if per else None,
                  "shapes_per_300_note": None if per else f"fewer than {SQL_SHAPE_WINDOW} trajectories: see distinct_shapes",
                  "errors": sum(c.failed for c in sql), "empty": sum(c.empty for c in sql),
                  "top_shapes": Counter(shapes).most_common(3)}
    searches = [c for e in eps for c in e.calls if c.name == "search"]
    canon = sum(tuple(normalize_name(str(c.args.get("query", ""))).split()) in masker.names for c in searches)
    fetches = top = 0
    for e in eps:
        last_top = None
        for c in e.calls:
            if c.name == "search":
                last_top = _top_link(c.result or "")
            elif c.name == "fetch":
                fetches += 1
                top += last_top is not None and str(c.args.get("url", "")).strip() == last_top
    out["search"] = {"queries": len(searches), "canonical_name_share": _ratio(canon, len(searches)),
                     "fetches": fetches, "fetch_top_hit_share": _ratio(top, fetches)}
    turns = [k for e in eps for k in e.call_turns]
    out["parallel_turn_share"] = _ratio(sum(k > 1 for k in turns), len(turns))
    rec = [recoveries(e.calls) for e in eps]
    out["recovery"] = {"share": _ratio(sum(r > 0 for _, r in rec), n), "trajectories_with_recovery": sum(r > 0 for _, r in rec),
                       "failed_or_empty_calls": sum(f for f, _ in rec), "recovered": sum(r for _, r in rec),
                       "tool_errors": sum(c.failed for e in eps for c in e.calls),
                       "empty_results": sum(c.empty for e in eps for c in e.calls)}
    # grounding
    g = Counter()
    ex: dict[str, list[str]] = defaultdict(list)
    bad: set[str] = set()
    for e in eps:
        r = ground_episode(e)
        g.update(r["counts"])
        for k, v in r["examples"].items():
            ex[k] += v
        if r["counts"].get("grounding_violations") or r["counts"].get("boolean_contradicts_record"):
            bad.add(e.id)
    out["grounding"] = {k: g.get(k, 0) for k in ("inputs", "grounded", "grounding_violations", "boolean_contradicts_record",
                                                 "declared_defaults", "defaults_visible_in_results", "inputs_not_most_recent",
                                                 "unparsed_code")}
    out["grounding"]["trajectories_with_violation"] = len(bad)
    out["grounding"]["examples"] = {k: v[:8] for k, v in ex.items()}
    # EHR values seen
    if with_rows:
        rows_by_ep = [(e.id, episode_rows(e)) for e in eps]
        demo = [f"{i}: {x}" for i, rows in rows_by_ep for x in implausible_demographics(rows)]
        out["implausible_demographics"] = {"count": len(demo), "examples": demo[:5]}
        if physiology is None:
            out["physiological_violations"] = {"count": None, "reason": NOT_AVAILABLE}
        else:
            viol = [(i, v) for i, rows in rows_by_ep for v in physiology(rows)]
            out["physiological_violations"] = {"count": len(viol), "trajectories_with_any": len({i for i, _ in viol}),
                                               "rows_checked": sum(len(r) for _, r in rows_by_ep),
                                               "examples": [f"{i}: {v}" for i, v in viol[:10]]}
    # final answers
    prose, closing = [], []
    for e in eps:
        if e.final_text is not None:
            before = e.final_text.split("<final_answer>")[0]
            after = e.final_text.split("</final_answer>")[-1] if "</final_answer>" in e.final_text else ""
            prose.append(normalise_thought(before + " " + after, masker=masker))
            paras = [p for p in re.split(r"\n\s*\n", before) if p.strip()]
            closing.append(normalise_thought(paras[-1] if paras else "", masker=masker))
    out["final_answer"] = {"answers": len(prose), "distinct_prose_ratio": _ratio(len(set(prose)), len(prose)),
                           "distinct_closing_ratio": _ratio(len(set(closing)), len(closing)),
                           "top_closing": Counter(closing).most_common(1),
                           "answered_calculators_per_task": round(statistics.mean(len(_answer_items(e.final_text)) for e in eps), 2)}
    return out


def _top_link(text: str) -> str | None:
    try:
        hits = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        m = re.search(r"(?:URL|link):\s*(\S+)", text or "")
        return m.group(1) if m else None
    if isinstance(hits, list) and hits and isinstance(hits[0], dict):
        return str(hits[0].get("link") or hits[0].get("url") or "") or None
    return None


def _answer_items(text: str | None) -> list[dict[str, Any]]:
    from calcmate.agent.final_answer import parse_final_answer

    if not text:
        return []
    try:
        items = parse_final_answer(text)
    except Exception:
        return []
    return [i.model_dump() if hasattr(i, "model_dump") else i for i in (items or [])]


def task_metrics(tasks: list[dict[str, Any]], masker: NameMasker) -> dict[str, Any]:
    from calcmate.calculators.registry import registry
    from calcmate.tasks import Task

    reg = registry()
    n = len(tasks)
    out: dict[str, Any] = {"n": n}
    if not n:
        return out
    out["questions"] = question_metrics([t.get("fuzzy_question", "") for t in tasks], masker)
    ids_per_task = []
    for t in tasks:
        ids = []
        for a in t.get("calculator_answers", []):
            cid = a.get("calculator_id")
            if not cid:
                c = reg.find(a.get("name", ""))
                cid = c.id if c else "?" + normalize_name(a.get("name", ""))
            ids.append(cid)
        ids_per_task.append(ids)
    uniq = {i for ids in ids_per_task for i in ids}
    out["calculators"] = {"per_task": round(statistics.mean(len(x) for x in ids_per_task), 2),
                          "unique": len(uniq), "registry": len(reg),
                          "registry_unused": len({c.id for c in reg} - uniq)}
    # the scenario's own calculators (taxonomy lists)
    try:
        from calcmate.synth.taxonomy import load_taxonomy

        tax = load_taxonomy(None, reg)
        cats = {normalize_name(c.name): set(c.calculators) for c in tax.categories}
        shares = []
        for t, ids in zip(tasks, ids_per_task):
            own = cats.get(normalize_name(t.get("task_scenario", "")))
            if own is not None and ids:
                shares.append(sum(i in own for i in ids) / len(ids))
        out["scenario_calculator_share"] = {"mean": round(statistics.mean(shares), 4) if shares else None,
                                            "tasks_under_half": sum(s < 0.5 for s in shares), "tasks": len(shares)}
    except Exception as e:  # a taxonomy being edited
        out["scenario_calculator_share"] = {"mean": None, "reason": f"taxonomy not loadable: {type(e).__name__}"}
    # consistency
    f, why = _lazy("calcmate.synth.consistency", "contradictions")
    if f is None:
        out["contradictions"] = {"count": None, "reason": why}
    else:
        found = []
        for t in tasks:
            for x in f(Task.model_validate(t)) or []:
                found.append(f"{t['task_id']}: {x}")
        out["contradictions"] = {"count": len(found), "tasks_with_any": len({x.split(':')[0] for x in found}),
                                 "examples": found[:10]}
    # pathways
    f, why = _pathway_checker()
    if f is None:
        out["pathways"] = {"off_pathway_share": None, "polarity_errors": None, "population_mismatches": None, "reason": why}
    else:
        off = pol = pop = total = 0
        ex: list[str] = []
        for t, ids in zip(tasks, ids_per_task):
            r = f(Task.model_validate(t))
            o = _field(r, "off_pathway", "off")
            p = _field(r, "polarity_errors", "polarity")
            q = _field(r, "population_mismatches", "population_mismatch", "mismatch")
            n = _field(r, "calculators")
            n = n if isinstance(n, int) and not isinstance(n, bool) else len(ids)
            off, pol, pop, total = off + _count(o), pol + _count(p), pop + _count(q), total + n
            for k, x in (("off-pathway", o), ("polarity", p), ("population", q)):
                if _count(x):
                    ex.append(f"{t['task_id']}: {k}: {x}")
        out["pathways"] = {"checker": f"calcmate.synth.pathways.{f.__name__}", "off_pathway_share": _ratio(off, total),
                           "off_pathway": off, "polarity_errors": pol, "population_mismatches": pop, "examples": ex[:10]}
    return out


def token_metrics(eps: list[Episode], rows: list[dict[str, Any]], counter: TokenCounter, max_length: int) -> dict[str, Any]:
    toks, plan_toks, over = [], [], []
    for e, r in zip(eps, rows):
        text = counter.render(e.messages, e.tools)
        n = counter.text(text)
        toks.append(n)
        plan_toks.append(counter.text(e.plan or ""))
        if n > max_length:
            over.append(e.id)
    recorded = [r.get("num_tokens") for r in rows if isinstance(r.get("num_tokens"), (int, float))]
    share = [p / t for p, t in zip(plan_toks, toks) if t]
    return {
        "method": f"tokenizer:{counter.name}" if counter.exact else f"estimate ({CHARS_PER_TOKEN} chars/token of the rendered chat template)",
        "p50": _pct(toks, 0.5), "p95": _pct(toks, 0.95), "max": max(toks, default=0), "mean": round(statistics.mean(toks), 1) if toks else 0,
        "max_length": max_length, "rows_over_max_length": len(over), "over_ids": over[:20],
        "flagged_by_export": sum(bool(r.get("over_max_length") or r.get("truncated")) for r in rows),
        "plan_token_share": _ratio(sum(plan_toks), sum(toks)),
        "plan_token_share_median_row": round(statistics.median(share), 4) if share else None,
        "dataset_num_tokens": {"p50": _pct(recorded, 0.5), "max": max(recorded, default=0),
                               "methods": sorted({str(r.get("token_count_method", "")) for r in rows})} if recorded else None,
    }


def audit(directory: str | Path, *, tokenizer: str | None = None, max_length: int = DEFAULT_MAX_LENGTH) -> dict[str, Any]:
    """Measure the run under ``directory``; the ``audit.json`` object (not written here)."""
    d = Path(directory)
    rows = _jsonl(str(d / "dataset" / "train.jsonl"))
    tasks_by = _by_key(_jsonl(str(d / "tasks" / "tasks*.jsonl")), "task_id")
    records = list(_by_key(_jsonl(str(d / "trajectories" / "trajectories*.jsonl")), "task_id").values())
    if not rows and not records and not tasks_by:
        raise FileNotFoundError(f"{d}: no dataset/train.jsonl, tasks/ or trajectories/ to audit")
    masker = NameMasker()
    task_names = {tid: [a.get("name", "") for a in t.get("calculator_answers", [])] + list(t.get("required_calculators", []))
                  for tid, t in tasks_by.items()}
    phys, phys_why = _lazy("calcmate.synth.physiology", "physiology_violations")
    kept = [r for r in records if r.get("status") == "kept" and r.get("trajectory")]
    ds_eps = [episode_from_row(r) for r in rows]
    tr_eps = [episode_from_trajectory(r["trajectory"]) for r in kept]
    counter = TokenCounter(tokenizer)
    rej = Counter(x.get("reason", "unknown") for r in records for x in r.get("rejections", []))
    result: dict[str, Any] = {
        "dir": str(d),
        "counts": {"dataset_rows": len(rows), "tasks": len(tasks_by), "trajectory_records": len(records),
                   "kept": len(kept), "rejected": sum(r.get("status") == "rejected" for r in records)},
        "dataset": episode_metrics(ds_eps, masker, task_names, phys),
        "trajectories": episode_metrics(tr_eps, masker, task_names, phys),
        "tasks": task_metrics([t for tid, t in tasks_by.items()
                               if not kept or tid in {r["task_id"] for r in kept} or not records], masker),
        "tokens": token_metrics(ds_eps, rows, counter, max_length) if rows else None,
        "tokens_exact": counter.exact,
        "verifier": {"attempted": len(records), "rejected": sum(r.get("status") == "rejected" for r in records),
                     "rejection_share": _ratio(sum(r.get("status") == "rejected" for r in records), len(records)),
                     "reasons": dict(rej)},
        "checkers": {"physiology": phys_why or "calcmate.synth.physiology.physiology_violations",
                     "consistency": _lazy("calcmate.synth.consistency", "contradictions")[1] or "calcmate.synth.consistency.contradictions",
                     "pathways": _pathway_checker()[1] or f"calcmate.synth.pathways.{_pathway_checker()[0].__name__}"},
    }
    if rows:  # dataset-side calculators: the row metadata and the final answer blocks
        per_meta = [len(r.get("calculators") or []) for r in rows]
        answered = [_answer_items(e.final_text) for e in ds_eps]
        from calcmate.calculators.registry import registry

        reg = registry()
        ids = {c.id for items in answered for i in items
               for c in [reg.find(str(i.get("calculator", "")))] if c is not None}
        result["dataset"]["calculators"] = {"per_task_metadata": round(statistics.mean(per_meta), 2),
                                            "per_task_answered": round(statistics.mean(len(a) for a in answered), 2),
                                            "unique_answered": len(ids), "registry": len(reg)}
    result["summary"] = summary(result)
    return result


def _get(d: dict[str, Any] | None, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _check(value: Any, target: str | None) -> bool | None:
    if target is None or value is None or not isinstance(value, (int, float)):
        return None
    t = target.replace(" ", "")
    if t.startswith("<="):
        return value <= float(t[2:])
    if t.startswith(">="):
        return value >= float(t[2:])
    if "-" in t and t[0].isdigit():
        lo, hi = t.split("-")
        return float(lo) <= value <= float(hi)
    if t.startswith("="):
        return None
    return value == float(t)


def summary(r: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per metric: the dataset's value, the trajectories' (or tasks') value, the target, pass."""
    D, T, K = r.get("dataset") or {}, r.get("trajectories") or {}, r.get("tasks") or {}
    reg = _get(K, "calculators", "registry")
    lines = [
        ("lone_assistant_turns", _get(D, "lone_assistant_turns", "total"), _get(T, "lone_assistant_turns", "total")),
        ("non_official_tool_calls", (_get(D, "non_official_tool_calls", "total") or 0)
         + len(_get(D, "non_official_tool_calls", "tool_schemas_outside_official") or {}) if D.get("n") else None,
         _get(T, "non_official_tool_calls", "total")),
        ("thought_top6_share", _get(D, "thoughts", "top6_share"), _get(T, "thoughts", "top6_share")),
        ("thought_distinct_ratio", _get(D, "thoughts", "distinct_ratio"), _get(T, "thoughts", "distinct_ratio")),
        ("question_distinct_openings", _get(D, "questions", "distinct_openings_share"), _get(K, "questions", "distinct_openings_share")),
        ("question_words", _get(D, "questions", "words_mean"), _get(K, "questions", "words_mean")),
        ("question_name_debris", _get(D, "questions", "name_debris"), _get(K, "questions", "name_debris")),
        ("questions_naming_a_calculator", _get(D, "questions", "naming_a_calculator"), _get(K, "questions", "naming_a_calculator")),
        ("questions_copying_reference", _get(D, "questions", "copying_reference"), _get(K, "questions", "copying_reference")),
        ("sql_shapes_per_300", _get(D, "sql", "shapes_per_300"), _get(T, "sql", "shapes_per_300")),
        ("sql_errors", _get(D, "sql", "errors"), _get(T, "sql", "errors")),
        ("sql_empty", _get(D, "sql", "empty"), _get(T, "sql", "empty")),
        ("search_canonical_name_share", _get(D, "search", "canonical_name_share"), _get(T, "search", "canonical_name_share")),
        ("fetch_top_hit_share", _get(D, "search", "fetch_top_hit_share"), _get(T, "search", "fetch_top_hit_share")),
        ("parallel_turn_share", D.get("parallel_turn_share"), T.get("parallel_turn_share")),
        ("recovery_share", _get(D, "recovery", "share"), _get(T, "recovery", "share")),
        ("grounding_violations", _get(D, "grounding", "grounding_violations"), _get(T, "grounding", "grounding_violations")),
        ("boolean_contradicts_record", _get(D, "grounding", "boolean_contradicts_record"), _get(T, "grounding", "boolean_contradicts_record")),
        ("declared_defaults", _get(D, "grounding", "declared_defaults"), _get(T, "grounding", "declared_defaults")),
        ("defaults_visible_in_results", _get(D, "grounding", "defaults_visible_in_results"), _get(T, "grounding", "defaults_visible_in_results")),
        ("inputs_not_most_recent", _get(D, "grounding", "inputs_not_most_recent"), _get(T, "grounding", "inputs_not_most_recent")),
        ("physiological_violations", _get(D, "physiological_violations", "count"), _get(T, "physiological_violations", "count")),
        ("implausible_demographics", _get(D, "implausible_demographics", "count"), _get(T, "implausible_demographics", "count")),
        ("contradictions", None, _get(K, "contradictions", "count")),
        ("scenario_calculator_share", None, _get(K, "scenario_calculator_share", "mean")),
        ("off_pathway_share", None, _get(K, "pathways", "off_pathway_share")),
        ("polarity_errors", None, _get(K, "pathways", "polarity_errors")),
        ("population_mismatches", None, _get(K, "pathways", "population_mismatches")),
        ("calculators_per_task", _get(D, "calculators", "per_task_answered"), _get(K, "calculators", "per_task")),
        ("unique_calculators", _get(D, "calculators", "unique_answered"), _get(K, "calculators", "unique")),
        ("plan_token_share", _get(r, "tokens", "plan_token_share"), None),
        ("tokens_per_row", f"{_get(r, 'tokens', 'p50')}/{_get(r, 'tokens', 'p95')}/{_get(r, 'tokens', 'max')}" if r.get("tokens") else None, None),
        ("rows_over_max_length", _get(r, "tokens", "rows_over_max_length"), None),
        ("final_prose_distinct_ratio", _get(D, "final_answer", "distinct_prose_ratio"), _get(T, "final_answer", "distinct_prose_ratio")),
        ("final_closing_distinct_ratio", _get(D, "final_answer", "distinct_closing_ratio"), _get(T, "final_answer", "distinct_closing_ratio")),
        ("verifier_rejections", None, _get(r, "verifier", "rejection_share")),
    ]
    out = []
    for key, dv, ov in lines:
        definition, target = METRICS[key]
        if key == "unique_calculators" and reg:
            target = f">= {reg}"
        checks = [c for c in (_check(dv, target), _check(ov, target)) if c is not None]
        out.append({"metric": key, "definition": definition, "dataset": dv, "trajectories_or_tasks": ov,
                    "target": target, "pass": (all(checks) if checks else None)})
    return out


def print_table(result: dict[str, Any], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    if console is None and con.width < 120:  # a narrow or captured terminal: keep metric names on one line
        con = Console(width=120)
    c = result["counts"]
    t = Table(title=f"Synthesis audit: {result['dir']} ({c['dataset_rows']} rows, {c['tasks']} tasks, "
                    f"{c['kept']} kept / {c['trajectory_records']} trajectories)")
    for col in ("metric", "dataset", "trajectories / tasks", "target", "ok"):
        t.add_column(col, overflow="fold")
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    for s in result["summary"]:
        ok = {True: "[green]yes[/]", False: "[red]no[/]", None: ""}[s["pass"]]
        t.add_row(s["metric"], fmt(s["dataset"]), fmt(s["trajectories_or_tasks"]), s["target"] or "", ok)
    con.print(t)
    tok = result.get("tokens") or {}
    con.print(f"tokens: {tok.get('method', 'n/a')} (tokens_exact={result['tokens_exact']})")
    for k, v in result["checkers"].items():
        con.print(f"checker {k}: {v}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m calcmate.synth.audit", description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="a synthesis output directory (data_gen/synthesize.py --out)")
    p.add_argument("--tokenizer", help="a local Qwen3 tokenizer (path or cached id) for exact token counts; default: estimate")
    p.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help=f"training max length (default {DEFAULT_MAX_LENGTH})")
    p.add_argument("--out", help="where to write the JSON (default DIR/audit.json)")
    p.add_argument("--quiet", action="store_true", help="no table")
    args = p.parse_args(argv)
    from calcmate.io import atomic_write_json

    try:
        result = audit(args.dir, tokenizer=args.tokenizer, max_length=args.max_length)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.dir) / "audit.json"
    atomic_write_json(out, result)
    if not args.quiet:
        print_table(result)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
