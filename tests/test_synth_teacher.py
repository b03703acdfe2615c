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
