"""The planner LLM client against a real local OpenAI-compatible HTTP server (instant answers)."""

from __future__ import annotations

import asyncio

from calcmate.config import load_config
from calcmate.synth.instant_server import InstantServer
from calcmate.synth.pipeline import SynthConfig, create_tasks


def test_llm_planner_writes_checked_texts_with_retries(tmp_path):
    with InstantServer(fail_first=True) as srv:
        cfg = load_config(None, ["num_tasks=6", "progress=false", "teacher.kind=llm", "teacher.planner.model=instant",
                                 f"teacher.planner.base_url={srv.base_url}", "teacher.planner.concurrency=4"], SynthConfig)
        tasks = asyncio.run(create_tasks(cfg, tmp_path))
        assert srv.requests >= 2 * len(tasks) + 1  # question + header per task, plus the retried 503
    assert len(tasks) >= 4
    for t in tasks:
        assert t.fuzzy_question.startswith("I'm looking after a patient")
        assert all(a.name in t.plan["header"] for a in t.calculator_answers)
    # resume: a second run finds every task done and asks the server nothing
    with InstantServer() as srv2:
        cfg2 = cfg.model_copy(update={"teacher": cfg.teacher.model_copy(update={"planner": {**cfg.teacher.planner, "base_url": srv2.base_url}})})
        again = asyncio.run(create_tasks(cfg2, tmp_path))
        assert srv2.requests == 0
    assert [t.task_id for t in again] == [t.task_id for t in tasks]


# -- the LLM executor, end to end: episode -> verify -> retry with process-only feedback -> export ----
import json  # noqa: E402
import shutil  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

RETRY_MARK = "A reviewer rejected your previous attempt"


class FakeExecutor:
    """An OpenAI-compatible chat server playing a careless-then-careful executor model.

    It replays recorded assistant turns (the scripted teacher's, from an offline run on the same
    tasks and patients), picked by the question and the number of assistant turns so far. On a
    first attempt every ``run_python`` program is replaced by one that prints the value the
    recorded program printed (the shortcut the verifier must refuse); once the system prompt
    carries a reviewer's feedback, the recorded turns are replayed faithfully. Every request and
    reply is kept, so a test can compare the export with what the model saw and said."""

    def __init__(self, scripts: dict[str, list[dict]]):
        self.scripts = scripts
        self.requests: list[dict] = []
        self.replies: list[tuple[str, bool, dict]] = []  # (question, retry?, assistant message)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                msg = owner.reply(req)
                body = json.dumps({"id": "x", "object": "chat.completion", "created": int(time.time()), "model": "fake",
                                   "choices": [{"index": 0, "message": msg,
                                                "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, req: dict) -> dict:
        msgs = req.get("messages", [])
        self.requests.append(req)
        system = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
        question = next(m.get("content") or "" for m in msgs if m.get("role") == "user")
        retry = RETRY_MARK in system
        turn = sum(m.get("role") == "assistant" for m in msgs)
        rec = self.scripts[question][turn]
        out = {"role": "assistant", "content": rec.get("content") or ""}
        calls = []
        for n, c in enumerate(rec.get("tool_calls") or []):
            f = c["function"]
            args = json.loads(f["arguments"]) if isinstance(f["arguments"], str) else dict(f["arguments"])
            if f["name"] == "run_python" and not retry:
                args = {"code": f"print({json.dumps(c['printed'])})"}
            calls.append({"id": f"fake_{turn}_{n}", "type": "function",
                          "function": {"name": f["name"], "arguments": json.dumps(args, ensure_ascii=False)}})
        if calls:
            out["tool_calls"] = calls
        self.replies.append((question, retry, out))
        return out

    def __enter__(self) -> "FakeExecutor":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


def _script(traj: dict) -> list[dict]:
    """The assistant turns of a trajectory, each run_python call with the value its program printed."""
    from calcmate.agent.oracle import printed_value
    from calcmate.synth.verify import python_stdout

    printed = {c["id"]: printed_value(python_stdout(c["result"])) for c in traj["tool_calls"] if c["tool"] == "run_python"}
    out = []
    for m in traj["messages"]:
        if m["role"] != "assistant":
            continue
        calls = [{**c, "printed": printed.get(c["id"])} for c in m.get("tool_calls") or []]
        out.append({"content": m.get("content") or "", "tool_calls": calls})
    return out


@pytest.fixture(scope="module")
def executor_run(shared_server, tmp_path_factory):
    """Offline synthesis of 3 tasks (the scripted teacher, run A), then the same tasks and patients
    through the pipeline's LLM executor path against the fake server (run B)."""
    from calcmate.synth.pipeline import synthesize_async

    a, b = tmp_path_factory.mktemp("scripted"), tmp_path_factory.mktemp("executor")
    base = ["num_tasks=3", "progress=false", "batch_size=8", "concurrency=2", "seed=5"]
    asyncio.run(synthesize_async(load_config(None, base, SynthConfig), a))
    kept = {r["task_id"]: r for r in _lines(a / "trajectories" / "trajectories.jsonl") if r["status"] == "kept"}
    assert len(kept) >= 2, [r.get("rejections") for r in _lines(a / "trajectories" / "trajectories.jsonl")]
    (b / "tasks").mkdir()
    tasks = [t for t in _lines(a / "tasks" / "tasks.jsonl") if t["task_id"] in kept]
    (b / "tasks" / "tasks.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks))
    shutil.copy(a / "tasks" / "failures.jsonl", b / "tasks" / "failures.jsonl") if (a / "tasks" / "failures.jsonl").exists() else None
    scripts = {}
    for r in kept.values():
        question = next(m["content"] for m in r["trajectory"]["messages"] if m["role"] == "user")
        scripts[question] = _script(r["trajectory"])
    with FakeExecutor(scripts) as fake:
        cfg = load_config(None, base + ["teacher.kind=llm", "teacher.executor.kind=openai", "teacher.executor.model=fake",
                                        f"teacher.executor.base_url={fake.base_url}", "max_retries=1"], SynthConfig)
        asyncio.run(synthesize_async(cfg, b))
    yield {"dir": b, "fake": fake, "tasks": {t["task_id"]: t for t in tasks}}


def test_llm_executor_is_rejected_then_retried_with_process_only_feedback(executor_run):
    from calcmate.agent.trajectory import Trajectory
    from calcmate.synth.teacher import feedback_leaks
    from calcmate.synth.verify import PROCESS_FEEDBACK, verify
    from calcmate.tasks import Task

    b, fake = executor_run["dir"], executor_run["fake"]
    recs = _lines(b / "trajectories" / "trajectories.jsonl")
    assert len(recs) == len(executor_run["tasks"])
    for r in recs:
        task = Task.model_validate(executor_run["tasks"][r["task_id"]])
        # attempt 1 printed the answers: rejected, only because nothing was computed
        assert r["status"] == "kept" and r["attempts"] == 2, r
        assert r["rejections"] and {x["attempt"] for x in r["rejections"]} == {1}
        assert {x["reason"] for x in r["rejections"]} == {"not_computed"}, r["rejections"]
        traj = Trajectory.model_validate(r["trajectory"])
        assert verify(task, traj).ok
        # what the retried model was told: the process, never a name, value or result
        system = traj.messages[0]["content"]
        assert RETRY_MARK in system and PROCESS_FEEDBACK["not_computed"] in system
        feedback = system.split(RETRY_MARK, 1)[1]
        assert feedback_leaks(feedback, task) == [] and not any(ch.isdigit() for ch in feedback), feedback
    retried = [req for req in fake.requests if RETRY_MARK in req["messages"][0]["content"]]
    assert retried and all(req["messages"][0]["content"].count(RETRY_MARK) == 1 for req in retried)


def test_llm_executor_export_is_what_the_model_said(executor_run):
    """Every exported assistant turn is the reply the fake model gave on the kept attempt."""
    b, fake = executor_run["dir"], executor_run["fake"]
    rows = _lines(b / "dataset" / "train.jsonl")
    assert len(rows) == len(executor_run["tasks"]) and all(r["attempts"] == 2 for r in rows)
    for row in rows:
        question = next(m["content"] for m in row["messages"] if m["role"] == "user")
        said = [m for q, retry, m in fake.replies if q == question and retry]
        exported = [m for m in row["messages"] if m["role"] == "assistant"]
        assert len(exported) == len(said)
        for e, s in zip(exported, said):
            assert e["content"].strip() == s["content"].strip()
            assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in e.get("tool_calls") or []] == \
                   [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in s.get("tool_calls") or []]
        assert not any("print(" in c["function"]["arguments"] and len(c["function"]["arguments"]) < 60
                       for m in exported for c in m.get("tool_calls") or [])


def test_llm_executor_export_keeps_the_prompt_the_model_saw(executor_run):
    """A kept retry is exported with exactly the system prompt its model saw, feedback included
    (the feedback is process-only, so it is safe to train on)."""
    b, fake = executor_run["dir"], executor_run["fake"]
    for row in _lines(b / "dataset" / "train.jsonl"):
        question = next(m["content"] for m in row["messages"] if m["role"] == "user")
        seen = [req["messages"][0]["content"] for req in fake.requests
                if RETRY_MARK in req["messages"][0]["content"] and any(m.get("content") == question for m in req["messages"])]
        assert seen and row["messages"][0]["content"] == seen[-1]
