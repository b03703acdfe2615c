"""The offline grammar (questions, plans, thoughts, final prose) and the optional LLM rewrite stage.

Diversity is measured as the audit measures it: distinct 8-word question openings, calculator-name-free
questions, question length; for thoughts, the share of the 6 most common normalised thoughts (numbers,
quotes and calculator names masked) and the distinct-normalised ratio. The rewrite stage runs against a
real local OpenAI-compatible HTTP server: a faithful paraphrase is kept, a corrupted number, a dropped
unit or a calculator name in a question is rejected (original kept, counted), tool calls are never sent.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from calcmate.calculators.registry import registry
from calcmate.calculators.spec import normalize_name
from calcmate.synth import grammar as G
from calcmate.synth.fuzzy import check_question, find_names

TABLES = ["patient_information", "vital_signs", "laboratory_result", "diagnostic_record", "examination_report",
          "order_inpatient", "admission_record", "anethesia_record", "visit_inpatient"]


# -- composed tasks ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tasks():
    """Composed offline tasks (composer + patient sampler), built once for the module."""
    from calcmate.synth.build import make_spec, to_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    tax = load_taxonomy(reg=reg)
    out = []
    for i in range(80):
        try:
            out.append(to_task(make_spec(tax, reg, "grammar-test", i), reg, "placeholder"))
        except Exception:  # noqa: BLE001 - a category the registry cannot fill is skipped
            continue
    assert len(out) >= 60
    return out


def _openings(qs):
    return len({" ".join(q.lower().split()[:8]) for q in qs}) / len(qs)


def test_grammar_file_validates_and_rejects_bad_references(tmp_path):
    g = G.load_grammar()
    assert set(G.THOUGHT_KINDS) <= {k.split(".")[0] for k in g.thoughts}
    assert all(len(a) >= 2 for a in g.pools.values())
    data = yaml.safe_load(G.DEFAULT_GRAMMAR.read_text(encoding="utf-8"))
    bad = json.loads(json.dumps(data))
    bad["thoughts"]["search"]["parts"][0]["alts"].append("Looking for {nonexistent_slot}.")
    with pytest.raises(ValueError, match="unknown slots"):
        G.Grammar.model_validate(bad)
    bad = json.loads(json.dumps(data))
    bad["pools"]["q_first"].append("Start with {@no_such_pool}.")
    with pytest.raises(ValueError, match="unknown pool"):
        G.Grammar.model_validate(bad)
    bad = json.loads(json.dumps(data))
    del bad["thoughts"]["select_value.worst_24h"]
    with pytest.raises(ValueError, match="worst_24h"):
        G.Grammar.model_validate(bad)


def test_questions_are_varied_long_and_name_free_over_1000_tasks(tasks):
    """1,000 questions: one per (task, draw), the way the builder draws one per task index."""
    reg = registry()
    qs, pairs = [], []
    for k in range(1000):
        t = tasks[k % len(tasks)]
        q = G.question(t, random.Random(f"q:{k}"))
        qs.append(q)
        pairs.append((t, q))
    assert _openings(qs) >= 0.90, _openings(qs)
    lens = [len(q.split()) for q in qs]
    assert 300 <= statistics.mean(lens) <= 450, statistics.mean(lens)
    assert sum(250 <= n <= 500 for n in lens) / len(lens) >= 0.9
    # never a calculator name or alias of the whole registry, never a digit, never a patient value
    pat = G._all_name_patterns()
    assert not [m for q in qs for m in pat.findall(normalize_name(q))]
    assert not any(re.search(r"\d", q) for q in qs)
    for t, q in pairs[: len(tasks)]:
        calcs = [reg.get(s["calc_id"]) for s in t.plan["steps"]]
        assert find_names(q, calcs) == []
        assert check_question(q, calcs, [str(i.value) for a in t.calculator_answers for i in a.inputs]) == []
    # no reference text: no 8-word run of any calculator's reference document appears in a question
    ref_grams = set()
    for c in reg:
        w = normalize_name(c.reference_markdown()).split()
        ref_grams.update(tuple(w[i:i + 8]) for i in range(len(w) - 7))
    for q in qs[:200]:
        w = normalize_name(q).split()
        assert not any(tuple(w[i:i + 8]) in ref_grams for i in range(len(w) - 7)), q


def test_question_describes_the_workflow_and_patient(tasks):
    t = next(t for t in tasks if t.plan["branches"] and t.plan["branches"][0]["else"])
    q = G.question(t, random.Random(1))
    paras = q.split("\n\n")
    assert len(paras) >= 3
    view = G.task_view(t)
    assert view.calcs and view.branch is not None
    # the branch is described with both arms in words
    assert re.search(r"\bif\b|\bonly if\b|threshold|cut-off|path splits", q, re.I)


def test_write_question_keeps_the_builder_api(tasks):
    from calcmate.synth.build import make_spec
    from calcmate.synth.fuzzy import write_question
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    spec = make_spec(load_taxonomy(reg=reg), reg, "grammar-test", 3)
    q1 = write_question(spec.workflow, spec.patient.executed, reg, random.Random(0))
    q2 = write_question(spec.workflow, spec.patient.executed, reg, random.Random(0), patient=spec.patient)
    for q in (q1, q2):
        assert len(q.split()) > 150 and not re.search(r"\d", q)
        assert find_names(q, [reg.get(s.calc_id) for s in spec.workflow.steps]) == []


def test_plan_text_gives_steps_inputs_dependencies_and_branch(tasks):
    words = []
    for i, t in enumerate(tasks[:40]):
        p = G.plan_text(t, random.Random(i))
        words.append(len(p.split()))
        n_main = len([s for s in t.plan["steps"] if s["role"] not in ("then", "else")])
        assert len(re.findall(r"^\d+\. ", p, re.M)) == n_main + (1 if t.plan["branches"] else 0)
        if t.plan["branches"]:
            b = t.plan["branches"][0]
            assert "**Branch**" in p and registry().get(b["decider"]).name in p
            assert "≥" in p or "comes out as" in p
        for d in t.plan["dependencies"]:
            if d["kind"] == "feeds":
                assert registry().get(d["src"]).name in p
    per_calc = statistics.mean(w / len(t.plan["steps"]) for w, t in zip(words, tasks))
    assert 50 <= per_calc <= 200, per_calc  # ~70-260 tokens per calculator: 5-12% of a 15-40k trajectory


def test_final_prose_has_every_value_unit_and_the_synthesis(tasks):
    for i, t in enumerate(tasks[:30]):
        text = G.final_prose(t, t.calculator_answers, random.Random(i))
        for a in t.calculator_answers:
            assert a.name in text
            v = a.final_answer
            shown = f"{v:g}" if isinstance(v, float) else str(v)
            assert shown in text, (a.name, shown)
            if getattr(a, "interpretation", None):
                assert str(a.interpretation).rstrip(".") in text
        assert len(text.split("\n\n")) >= 2  # the list, then what the results mean together
    # results may also be given as plain dicts
    t = tasks[0]
    res = [{"name": a.name, "value": a.final_answer} for a in t.calculator_answers]
    assert all(a.name in G.final_prose(t, res, random.Random(0)) for a in t.calculator_answers)


# -- thoughts ---------------------------------------------------------------------------------------
def _slot_draw(kind: str, rng: random.Random) -> dict:
    reg = list(registry())
    c = rng.choice(reg)
    concepts = G.input_concepts(c) or ["the inputs"]
    concept = rng.choice(concepts)
    num = lambda: str(round(rng.uniform(0.5, 180), rng.choice([0, 1, 2])))  # noqa: E731
    unit = rng.choice(["mg/dL", "mmol/L", "mEq/L", "mmHg", "/min", "%", "°C", "kg", "points", ""])
    time_ = f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} {rng.randint(10, 23)}:{rng.randint(10, 59)}"
    other = rng.choice(reg)
    s = {
        "explore_schema": {"goal": G._join(rng.sample(concepts, min(3, len(concepts)))), "n_tables": str(rng.randint(5, 12))},
        "describe_tables": {"tables": rng.sample(TABLES, rng.randint(1, 3)), "concept": concept},
        "search": {"concept": rng.choice(G.specific_tags(c) or [concept]) + " " + rng.choice(["risk", "score", "severity", "calculation"]),
                   "query": f"{concept} {rng.choice(['formula', 'criteria', 'calculator', 'score'])}", "prev": other.name},
        "pick_hit": {"title": c.name, "position": str(rng.randint(1, 5))} | ({"top_title": other.name} if rng.random() < 0.3 else {}),
        "fetch_read": {"calc": c.name, "inputs": concepts[:5], "note": rng.choice(["creatinine must be in mg/dL", "age in years", "defaults apply when a value is missing"])},
        "retrieve": {"concepts": rng.sample(concepts, min(2, len(concepts))), "table": rng.choice(TABLES), "calc": c.name,
                     "columns": "item_name, value, unit, record_time"},
        "select_value": {"rule": rng.choice(G.SELECT_RULES), "concept": concept, "value": num(), "unit": unit, "time": time_,
                         "n_rows": str(rng.randint(2, 9))},
        "missing_default": {"concept": concept, "default": num(), "unit": unit, "calc": c.name},
        "recover_error": {"table": rng.choice(TABLES), "error": f'column "{concept.replace(" ", "_")}" does not exist',
                          "column": concept.replace(" ", "_"), "corrected": "item_name"},
        "recover_empty": {"concept": concept, "table": rng.choice(TABLES), "filter": f"item_name = '{concept}'",
                          "broadened": f"item_name ILIKE '%{concept.split()[0]}%'"},
        "compute": {"calc": c.name, "inputs": concepts[:4], "conversion": rng.choice(["", "creatinine µmol/L to mg/dL", "temperature °F to °C"])},
        "result": {"calc": c.name, "value": num(), "unit": unit, "interpretation": rng.choice([b.label for b in c.bands] or ["normal"]),
                   "next": rng.choice([other.name, "the branch decision", "the final synthesis"])},
        "branch": {"calc": c.name, "value": num(), "threshold": num(), "arm": rng.choice(["then", "else"]), "chosen": other.name,
                   "other": rng.choice(reg).name, "source": f"the {c.name} reference", "label": "high risk", "unit": unit},
        "parallel": {"calls": [f"search for {rng.choice(reg).name}" for _ in range(rng.randint(2, 3))], "n": str(rng.randint(2, 3))},
    }[kind]
    return {k: v for k, v in s.items() if v not in ("", [])}


def test_thoughts_reason_and_are_diverse():
    """Thousands of draws over all kinds: top-6 normalised share <= 15%, distinct normalised >= 30%."""
    rng = random.Random(7)
    names = [c.name for c in registry()]
    norm = []
    for i in range(4000):
        kind = list(G.THOUGHT_KINDS)[i % len(G.THOUGHT_KINDS)]
        text = G.thought(kind, _slot_draw(kind, rng), rng)
        assert text and "{" not in text and "}" not in text, (kind, text)
        norm.append(G.normalise_thought(text, names))
    counts = Counter(norm)
    top6 = sum(n for _, n in counts.most_common(6)) / len(norm)
    distinct = len(counts) / len(norm)
    assert top6 <= 0.15, top6
    assert distinct >= 0.30, distinct
    # within one kind too (the audit sees many search/retrieve thoughts per trajectory)
    for kind in ("search", "retrieve", "result", "select_value"):
        ks = [G.normalise_thought(G.thought(kind, _slot_draw(kind, rng), rng), names) for _ in range(300)]
        assert sum(n for _, n in Counter(ks).most_common(6)) / len(ks) <= 0.15, kind


def test_thought_kinds_use_their_slots():
    rng = random.Random(0)
    t = G.thought("select_value", {"rule": "worst_24h", "concept": "heart rate", "value": "131", "unit": "/min",
                                   "time": "2025-03-02 04:10", "n_rows": "6"}, rng)
    assert "131" in t and re.search(r"worst|most abnormal", t)
    t = G.thought("select_value", {"rule": "admission", "concept": "sodium", "value": "128", "unit": "mEq/L", "n_rows": "3"}, rng)
    assert "128" in t and re.search(r"admission|presentation", t)
    t = G.thought("pick_hit", {"title": "Right Page", "top_title": "Wrong Page", "position": "3"}, rng)
    assert "Wrong Page" in t and "Right Page" in t
    t = G.thought("branch", {"calc": "X", "value": "4", "threshold": "2", "arm": "then", "chosen": "Y", "other": "Z"}, rng)
    assert "Y" in t and ("4" in t or "2" in t)
    t = G.thought("missing_default", {"concept": "urine output", "default": "0", "unit": "mL"}, rng)
    assert "0" in t and "default" in t.lower()
    with pytest.raises(ValueError, match="needs slots"):
        G.thought("search", {}, rng)
    with pytest.raises(ValueError, match="unknown thought kind"):
        G.thought("nope", {"x": 1}, rng)


def test_normalise_masks_numbers_quotes_and_names():
    a = G.normalise_thought('CURB-65 is 3 points; the "item_name" column said 7.4.')
    b = G.normalise_thought('Wells\' Criteria for Pulmonary Embolism is 12 points; the "other" column said 1.')
    assert a == b


# -- the rewrite stage ------------------------------------------------------------------------------
_SWAPS = [("I need", "I require"), ("I want", "I'd like"), ("patient", "person"), ("Then", "After that"),
          ("next", "following"), ("the record", "the chart"), ("is", "is"), ("because", "since")]


def _paraphrase(text: str) -> str:
    out = text
    for a, b in _SWAPS:
        out = out.replace(a, b)
    return "Put another way: " + out if out == text else out


def _corrupt(text: str) -> str:
    m = re.search(r"\d+(?:\.\d+)?", text)
    if not m:
        return _paraphrase(text) + " Consider the qSOFA as well."  # a question gains a calculator name
    n = m.group(0)
    bumped = str(float(n) + 1) if "." in n else str(int(n) + 1)
    return text[: m.start()] + bumped + text[m.end():]


class _FakeLLM:
    """A real local OpenAI-compatible chat server that paraphrases (mode 'good') or corrupts ('bad')."""

    def __init__(self, mode: str):
        outer = self
        self.mode, self.prompts = mode, []

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                user = [m["content"] for m in req["messages"] if m["role"] == "user"][-1]
                outer.prompts.append(user)
                text = _paraphrase(user) if outer.mode == "good" else _corrupt(user)
                body = json.dumps({"id": "x", "object": "chat.completion", "created": int(time.time()),
                                   "model": req.get("model", "m"),
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _conversation():
    return [
        {"role": "system", "content": "You are a clinical assistant."},
        {"role": "user", "content": "I need a plan for the patient."},
        {"role": "assistant", "content": "I need the latest sodium before anything else, because the patient is confused.",
         "tool_calls": [{"type": "function", "function": {"name": "run_read_only_sql",
                                                           "arguments": {"query": "SELECT value FROM laboratory_result WHERE item_name = 'Sodium' LIMIT 5"}}}]},
        {"role": "tool", "name": "run_read_only_sql", "content": '[{"value": "128 mEq/L"}]'},
        {"role": "assistant", "content": "Sodium is 128 mEq/L, taken from the most recent row; next I want the glucose.",
         "tool_calls": [{"type": "function", "function": {"name": "run_python", "arguments": {"code": "print(128 + 1.6 * (400 - 100) / 100)"}}}]},
        {"role": "tool", "name": "run_python", "content": "132.8"},
        {"role": "assistant", "content": "The corrected sodium is 132.8 mEq/L, which is mildly low, so I want a slow correction."
                                         "\n\n<final_answer>\n[{\"calculator\": \"Sodium Correction for Hyperglycemia\", \"value\": 132.8}]\n</final_answer>"},
    ]


def test_check_rewrite_compares_numbers_units_and_names():
    from calcmate.synth.rewrite import check_rewrite

    o = "Sodium is 128 mEq/L and glucose 400 mg/dL; next the anion gap."
    assert check_rewrite(o, "Glucose is 400 mg/dL and sodium 128 mEq/L; the anion gap comes next.", "thought") == []
    assert any("numbers" in p for p in check_rewrite(o, "Sodium is 129 mEq/L and glucose 400 mg/dL; next the anion gap.", "thought"))
    assert any("units" in p for p in check_rewrite(o, "Sodium is 128 mmol/L and glucose 400 mg/dL; next the anion gap.", "thought"))
    assert any("calculator names" in p for p in check_rewrite("I need a view of pneumonia severity here today.",
                                                               "I need the CURB-65 for pneumonia severity here today.", "question"))
    assert any("digits" in p for p in check_rewrite("A man in his sixties with chest pain today.",
                                                    "A man aged 65 with chest pain, seen today.", "question"))


def test_rewrite_keeps_good_paraphrases_and_rejects_corruptions(tasks):
    from calcmate.synth.rewrite import RewriteConfig, rewrite_conversations, rewrite_texts

    qs = [G.question(t, random.Random(i)) for i, t in enumerate(tasks[:4])]
    items = [("question", q) for q in qs] + [("thought", "Sodium is 128 mEq/L, the latest of 3 rows; next I need the glucose."),
                                             ("prose", "The anion gap is 18 mEq/L, which is high, because the patient is acidotic.")]
    with _FakeLLM("good") as srv:
        cfg = RewriteConfig(enabled=True, base_url=srv.base_url, model="fake", concurrency=4, temperature=0.9)
        outs, stats = rewrite_texts(items, cfg)
        assert stats.sent == len(items) and stats.kept == len(items) and stats.rejected == 0
        assert all(o.kept and o.text != o.original for o in outs)
        convs, cstats = rewrite_conversations([_conversation()], cfg)
        sent_to_llm = "\n".join(srv.prompts)
    # tool calls are never sent and survive byte for byte; tool results are untouched; protected spans kept
    assert "SELECT" not in sent_to_llm and "print(" not in sent_to_llm and "<final_answer>" not in sent_to_llm
    orig = _conversation()
    for a, b in zip(orig, convs[0]):
        assert a.get("tool_calls") == b.get("tool_calls")
        if a["role"] != "assistant":
            assert a == b
    assert convs[0][2]["content"] != orig[2]["content"]
    assert "<final_answer>" in convs[0][-1]["content"] and "132.8" in convs[0][-1]["content"]
    assert cstats.kept == cstats.sent == 3

    with _FakeLLM("bad") as srv:
        cfg = RewriteConfig(enabled=True, base_url=srv.base_url, model="fake")
        outs, stats = rewrite_texts(items, cfg)
        convs, cstats = rewrite_conversations([_conversation()], cfg)
    assert stats.kept == 0 and stats.rejected == len(items)
    assert all(o.text == o.original for o in outs)
    assert stats.reasons["numbers changed"] == 2 and stats.reasons["calculator names added"] == len(qs)
    assert convs[0] == _conversation() and cstats.rejected == 3


def test_rewrite_failures_keep_the_original():
    from calcmate.synth.rewrite import RewriteConfig, rewrite_texts

    cfg = RewriteConfig(enabled=True, base_url="http://127.0.0.1:9/v1", model="none", max_retries=0, timeout_s=2)
    outs, stats = rewrite_texts([("thought", "Sodium is 128 mEq/L; now the glucose please.")], cfg)
    assert outs[0].text == outs[0].original and stats.failed == 1 and stats.kept == 0


@pytest.mark.slow
def test_questions_over_1000_distinct_offline_tasks():
    """The full figure on 1,000 distinct offline tasks (about 2 minutes): run with -m slow."""
    from calcmate.synth.build import make_spec, task_rng, to_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    tax = load_taxonomy(reg=reg)
    qs = []
    for i in range(1000):
        try:
            t = to_task(make_spec(tax, reg, 0, i), reg, "x")
        except Exception:  # noqa: BLE001
            continue
        qs.append(G.question(t, task_rng(0, i + 10_000_019)))
    assert _openings(qs) >= 0.90
    assert 300 <= statistics.mean(len(q.split()) for q in qs) <= 450
    pat = G._all_name_patterns()
    assert not [m for q in qs for m in pat.findall(normalize_name(q))]


@pytest.mark.parametrize("mode", ["good", "bad"])
def test_synthesis_rewrite_stage_end_to_end(tmp_path, shared_server, mode):
    """data_gen/synthesize.py with rewrite.enabled: questions are paraphrased before the episodes and
    thoughts and prose at export; a rewrite that changes a number is discarded; tool calls never change."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "data_gen"))
    import synthesize

    with _FakeLLM(mode) as llm:
        args = ["--config", str(root / "configs/synth/offline.yaml"), "--quiet", "--set", "num_tasks=2",
                "rewrite.enabled=true", f"rewrite.base_url={llm.base_url}", "rewrite.concurrency=4"]
        assert synthesize.main([*args, "--out", str(tmp_path / "rw")]) == 0
        assert synthesize.main([*args[:-3], "--out", str(tmp_path / "plain")]) == 0
    stats = json.loads((tmp_path / "rw" / "stats.json").read_text())["rewrite"]
    rows = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "rw" / "dataset" / "train.jsonl").read_text().splitlines()}
    plain = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "plain" / "dataset" / "train.jsonl").read_text().splitlines()}
    assert rows and stats["sent"] > 0
    changed = 0
    for rid, row in rows.items():
        if rid not in plain:
            continue
        a = [m for m in row["messages"] if m["role"] == "assistant"]
        b = [m for m in plain[rid]["messages"] if m["role"] == "assistant"]
        calls = lambda ms: [[(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]  # noqa: E731
                            for m in ms]
        assert calls(a) == calls(b)  # never sent, never changed
        changed += sum(x["content"] != y["content"] for x, y in zip(a, b))
    if mode == "good":
        assert stats["kept"] > 0 and changed > 0
    else:  # every rewrite moved a number or added a name: all discarded, the originals exported
        assert stats["kept"] == 0 and stats["rejected"] > 0
