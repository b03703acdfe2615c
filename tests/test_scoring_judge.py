"""The optional LLM-judge extractor, end to end through scoring, against a real local HTTP server
speaking /v1/chat/completions: free-text answers are read by the judge and its items feed CS/QP;
bad JSON, HTTP 5xx and timeouts are retried (tenacity), and a judge that keeps failing leaves its
task with no items and a recorded reason, never a crashed run."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.runner import EvalConfig, ScoringSettings, score_run
from calcmate.agent.trajectory import FinalAnswerItem, Trajectory
from calcmate.scoring.extract import (JudgeConfig, JudgeError, _BadReply, extract_for_scoring, judge_extract,
                                      judge_prompt, parse_judge_reply)
from calcmate.tasks import Task

NAMES = ["Creatinine Clearance (Cockcroft-Gault Equation)", "Anion Gap", "HEART Score for Major Cardiac Events"]
TRUTHS = [58.3, 12, 5]


def task(tid: str) -> Task:
    return Task.model_validate({
        "task_id": tid, "fuzzy_question": "q", "task_category": "Clinical Medicine / Medicine & Organ Systems / Nephrology",
        "calculator_answers": [{"order": i + 1, "name": n, "final_answer": v, "inputs": []}
                               for i, (n, v) in enumerate(zip(NAMES, TRUTHS))]})


# Prose that the deterministic rules cannot read (no block, no JSON, no "Name: value" lines).
PROSE = {
    "good": "Her kidney function estimate by the weight-based formula comes to about 59 mL/min, and the gap "
            "between measured cations and anions is 14, so no hidden acid.",
    "badjson_then_ok": "By the weight-based formula her clearance is near 58 mL/min; the electrolyte gap is 12.",
    "http500_then_ok": "Chest pain risk puts her at five points, which is moderate risk.",
    "timeout": "Clearance, roughly speaking, is sixty and the gap twelve.",
    "always_bad": "The gap comes out at twelve when computed from sodium chloride and bicarbonate.",
    "unauthorized": "Kidney clearance of fifty-eight, we think.",
    "says_none": "I could not compute anything without the labs.",
}
# What the scripted judge returns for each answer once it answers well (names from the prompt's list).
JUDGED = {
    "good": [{"calculator": NAMES[0], "value": 59, "unit": "mL/min", "interpretation": None},
             {"calculator": NAMES[1], "value": 14, "unit": None, "interpretation": None}],
    "badjson_then_ok": [{"calculator": NAMES[0], "value": "58 mL/min"}, {"calculator": NAMES[1], "value": 12}],
    "http500_then_ok": [{"calculator": NAMES[2], "value": 5, "interpretation": "moderate risk"}],
    "says_none": [],
}


class JudgeServer:
    """A real HTTP server answering chat completions from ``script(case, attempt) -> (status, content, delay)``,
    where ``case`` is the PROSE key found in the prompt. Records every request body."""

    def __init__(self, script):
        self.script, self.requests, self.lock = script, [], threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                case = next((k for k, v in PROSE.items() if v in prompt), "?")
                with srv.lock:
                    srv.requests.append(body)
                    attempt = sum(1 for r in srv.requests if PROSE.get(case, "\0") in r["messages"][-1]["content"])
                status, content, delay = srv.script(case, attempt)
                time.sleep(delay)
                if status == 200:
                    out = json.dumps({"id": "j", "object": "chat.completion", "created": 0, "model": body["model"],
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": content}}],
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
                else:
                    out = json.dumps({"error": {"message": content, "type": "server_error"}})
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out.encode())))
                    self.end_headers()
                    self.wfile.write(out.encode())
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout case)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls(self, case: str) -> list[dict]:
        return [r for r in self.requests if PROSE[case] in r["messages"][-1]["content"]]


def script(case: str, attempt: int):
    if case == "badjson_then_ok" and attempt == 1:
        return 200, "Sure! The answer reports a clearance of 58 and a gap of 12.", 0
    if case == "http500_then_ok" and attempt == 1:
        return 500, "upstream overloaded", 0
    if case == "timeout":
        return 200, "[]", 1.0  # slower than the judge's timeout, every time
    if case == "always_bad":
        return 200, '[{"calculator": "Anion Gap", "value": 12', 0  # truncated JSON
    if case == "unauthorized":
        return 401, "invalid api key", 0
    return 200, "<think>reading</think>```json\n" + json.dumps(JUDGED[case]) + "\n```", 0


@pytest.fixture
def judge_server():
    server = JudgeServer(script)
    yield server
    server.close()


def judge_cfg(url: str, **kw) -> JudgeConfig:
    return JudgeConfig(**{"base_url": url, "model": "deepseek-v3.1", "timeout_s": 0.4, "attempts": 2, "retry_wait_s": 0.01, **kw})


def prose_traj(tid: str, text: str) -> Trajectory:
    return Trajectory(task_id=tid, policy="model:x", protocol="react_json", finished=True, stop_reason="answer",
                      final_answer_text=text, rounds=3)


def test_judge_scores_free_text_end_to_end_and_failures_are_recorded(judge_server, tmp_path):
    block = [FinalAnswerItem(calculator="Cockcroft-Gault", value=58.0), FinalAnswerItem(calculator="AG", value=12)]
    trajs = {k: prose_traj(k, v) for k, v in PROSE.items()}
    trajs["block"] = Trajectory(task_id="block", policy="model:x", finished=True, final_answer=block,
                                final_answer_text=write_final_answer(block), rounds=2)
    tasks = [task(k) for k in trajs]
    records = {k: t.model_dump(mode="json") for k, t in trajs.items()}
    cfg = EvalConfig(scoring=ScoringSettings(judge=judge_cfg(judge_server.url, concurrency=4)))

    t0 = time.perf_counter()
    scores = asyncio.run(score_run(tasks, records, cfg, tmp_path / "judged"))
    assert time.perf_counter() - t0 < 10
    per = {s["task_id"]: s for s in scores["per_task"]}
    on_disk = {s["task_id"]: s for s in json.loads((tmp_path / "judged" / "scores.json").read_text())["per_task"]}
    assert on_disk == per

    # the judge's items feed CS/QP: 59 is within 5% of 58.3, the integer gap 14 != 12, HEART not stated
    good = per["good"]
    assert good["extraction"] == "judge" and good["tf"]
    assert (good["cs_hits"], good["qp_hits"]) == (2, 1) and good["cs"] == pytest.approx(2 / 3)
    assert [d["value_match"] for d in good["details"]] == [True, False, False]
    assert good["details"][0]["predicted"]["value"] == 59 and good["details"][0]["predicted"]["unit"] == "mL/min"
    # retried after an unreadable reply and after an HTTP 500, then scored from the good reply
    assert per["badjson_then_ok"]["extraction"] == "judge" and per["badjson_then_ok"]["qp_hits"] == 2
    assert per["http500_then_ok"]["extraction"] == "judge"
    assert (per["http500_then_ok"]["cs_hits"], per["http500_then_ok"]["qp_hits"]) == (1, 1)
    assert len(judge_server.calls("badjson_then_ok")) == 2 and len(judge_server.calls("http500_then_ok")) == 2
    # a judge that validly finds nothing: no items, no error
    assert per["says_none"]["extraction"] == "judge" and per["says_none"]["cs"] == 0
    assert "extraction_error" not in per["says_none"]
    # failures: no items for that task, TF kept (the model did answer), the reason recorded
    for case, reason, tries in (("timeout", "timed out after 0.4 s (2 attempts)", 2),
                                ("always_bad", "not a JSON list", 2),
                                ("unauthorized", "HTTP 401 (1 attempt)", 1)):  # a 4xx is not retried
        s = per[case]
        assert s["extraction"] == "judge_failed" and s["tf"] and s["cs"] == 0 and s["qp"] == 0, case
        assert reason in s["extraction_error"], (case, s["extraction_error"])
        assert len(judge_server.calls(case)) == tries, case
    # a structured block is read deterministically: the judge never sees it
    assert per["block"]["extraction"] == "block" and per["block"]["qp_hits"] == 2
    assert not [r for r in judge_server.requests if "<final_answer>" in r["messages"][-1]["content"]]
    assert scores["overall"]["extraction"] == {"judge": 4, "judge_failed": 3, "block": 1}
    assert "LLM judge deepseek-v3.1" in (tmp_path / "judged" / "report.md").read_text()

    # the prompt: one user message with every calculator name of the task and the whole answer,
    # never the ground-truth values; deterministic sampling
    req = judge_server.calls("good")[0]
    assert req["model"] == "deepseek-v3.1" and req["temperature"] == 0 and len(req["messages"]) == 1
    prompt = req["messages"][0]["content"]
    assert all(n in prompt for n in NAMES) and PROSE["good"] in prompt
    assert "58.3" not in prompt

    # without the judge the same prose scores nothing: the judge is what read it
    plain = asyncio.run(score_run(tasks, records, EvalConfig(), tmp_path / "plain"))
    assert {s["task_id"]: s["cs_hits"] for s in plain["per_task"]}["good"] == 0


def test_judge_extract_raises_with_reason_and_extraction_never_raises(judge_server):
    cfg = judge_cfg(judge_server.url, attempts=1)
    with pytest.raises(JudgeError, match="not a JSON list"):
        asyncio.run(judge_extract(PROSE["always_bad"], cfg, NAMES))
    # nothing listens on this port: a connection error, retried, then a reason
    dead = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", attempts=2, retry_wait_s=0.01, timeout_s=1)
    ex = asyncio.run(extract_for_scoring(prose_traj("x", "Clearance about 59."), dead, NAMES))
    assert ex.items == [] and ex.how == "judge_failed" and "(2 attempts)" in ex.error


def test_parse_judge_reply_forms():
    items = parse_judge_reply('Here you go:\n[{"calculator": "Anion Gap", "value": 12, "unit": "mEq/L"}]\nDone.')
    assert [(i.calculator, i.value, i.unit) for i in items] == [("Anion Gap", 12, "mEq/L")]
    wrapped = parse_judge_reply('{"calculators": [{"name": "HEART", "result": "5 points"}]}')
    assert [(i.calculator, i.value) for i in wrapped] == [("HEART", "5 points")]
    assert parse_judge_reply("<think>none here</think>[]") == []
    for bad in ("", "no results", '{"answer": 3}', '[{"calculator": "A", "value": 1'):
        with pytest.raises(_BadReply):
            parse_judge_reply(bad)


def test_judge_prompt_without_names_and_truncation():
    p = judge_prompt("x" * 50, [], max_chars=10)
    assert "asked for these calculators" not in p and "x" * 10 in p and "x" * 11 not in p
    p = judge_prompt("answer", ["Anion Gap", "Anion Gap", " "])
    assert p.count("- Anion Gap") == 1
