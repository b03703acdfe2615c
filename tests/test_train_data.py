"""Assistant-only masks on tool trajectories, over-long accounting, row normalization, the estimator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calcmate.training.data import (
    IGNORE_INDEX, DatasetFormatError, TemplateMaskError, check_assistant_mask, encode_dataset, encode_row, load_rows,
    normalize_row, resolve_training_template, trained_spans,
)

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sft" / "trajectories.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]


@pytest.fixture(scope="module")
def tok():
    from calcmate.training.tiny import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="module")
def template(tok):
    return resolve_training_template(tok)


def expected_assistant_text(msg: dict) -> str:
    """What Qwen3-Instruct-2507 renders for an assistant turn after '<|im_start|>assistant\\n', end token included."""
    parts = [msg.get("content") or ""]
    for i, tc in enumerate(msg.get("tool_calls") or []):
        fn = tc["function"]
        sep = "\n" if (i == 0 and parts[0]) or i > 0 else ""
        parts.append(f'{sep}<tool_call>\n{{"name": "{fn["name"]}", "arguments": {fn["arguments"]}}}\n</tool_call>')
    return "".join(parts) + "<|im_end|>\n"


def test_stock_template_is_swapped_for_trls_training_template(tok, template):
    from trl.chat_template_utils import qwen3_instruct_2507_training_chat_template

    assert template == qwen3_instruct_2507_training_chat_template
    assert 0 < check_assistant_mask(tok, template) < 1


def test_trained_tokens_are_exactly_the_assistant_turns_and_end_tokens(tok, template):
    for row in ROWS:
        enc = encode_row(tok, template, row["messages"], row["tools"], max_length=None, overlong="truncate")
        spans = trained_spans(tok, enc["input_ids"], enc["labels"])
        expected = [expected_assistant_text(m) for m in row["messages"] if m["role"] == "assistant"]
        assert spans == expected
        # and nothing else: every untrained token decodes to the system/user/tool/header text
        untrained = tok.decode([t for t, lab in zip(enc["input_ids"], enc["labels"]) if lab == IGNORE_INDEX])
        assert "<tool_response>" in untrained and "Final answer" not in untrained
        assert untrained.count("<|im_start|>assistant\n") == len(expected)


def test_template_without_generation_markers_fails_clearly(tok):
    from calcmate.training.tiny import build_tokenizer

    t = build_tokenizer()
    t.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    with pytest.raises(TemplateMaskError, match="chat_template: .*generation"):
        resolve_training_template(t)
    broken = "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"
    with pytest.raises(TemplateMaskError, match="non-assistant text"):
        check_assistant_mask(tok, broken)


def test_overlong_rows_are_truncated_or_dropped_and_counted(tok, template):
    ds = load_rows(FIXTURE)
    full, st = encode_dataset(ds, tok, template, max_length=None, overlong="truncate")
    lengths = sorted(len(x) for x in full["input_ids"])
    cut = lengths[1] + 1  # two rows fit, two are longer
    kept, st = encode_dataset(ds, tok, template, max_length=cut, overlong="truncate")
    assert (st.rows, st.kept, st.truncated, st.dropped_overlong) == (4, 4, 2, 0)
    assert max(len(x) for x in kept["input_ids"]) == cut and st.tokens_before == sum(lengths)
    kept, st = encode_dataset(ds, tok, template, max_length=cut, overlong="drop")
    assert (st.kept, st.truncated, st.dropped_overlong) == (2, 0, 2) and len(kept) == 2
    assert 0 < st.trained_fraction < 1 and "2 dropped as over max_length" in st.summary()
    # a cut inside the system prompt leaves nothing to train: dropped and counted, never trained on silently
    kept, st = encode_dataset(ds, tok, template, max_length=20, overlong="truncate")
    assert st.kept == 0 and st.dropped_no_trained == 4


def test_rows_from_arrow_and_dict_arguments_render_like_json_strings(tok, template, tmp_path):
    """Parquet unifies tool-call structs (absent keys -> null); dict arguments become the JSON string tojson gives."""
    import datasets

    row = ROWS[0]
    as_dicts = json.loads(json.dumps(row["messages"]))
    for m in as_dicts:
        for tc in m.get("tool_calls") or []:
            tc["function"]["arguments"] = json.loads(tc["function"]["arguments"])
    msgs, _ = normalize_row(as_dicts, row["tools"])
    ref = encode_row(tok, template, row["messages"], row["tools"], max_length=None, overlong="drop")
    assert encode_row(tok, template, msgs, row["tools"], max_length=None, overlong="drop")["input_ids"] == ref["input_ids"]

    datasets.Dataset.from_list([{"messages": row["messages"], "tools": row["tools"], "id": "x"}] * 2).to_parquet(
        tmp_path / "rows.parquet")
    ds = load_rows(tmp_path / "rows.parquet")
    got = encode_row(tok, template, ds[0]["messages"], ds[0]["tools"], max_length=None, overlong="drop")
    assert got["input_ids"] == ref["input_ids"]


def test_bad_rows_name_the_problem():
    with pytest.raises(DatasetFormatError, match=r"messages\[0\].role"):
        normalize_row([{"role": "robot", "content": "x"}], None)
    with pytest.raises(DatasetFormatError, match="no assistant message"):
        normalize_row([{"role": "user", "content": "x"}], None)


def test_estimator_reproduces_published_anchor_and_field_notes():
    from calcmate.training.arch import KNOWN
    from calcmate.training.estimate import attention_share, estimate

    q4 = KNOWN["Qwen/Qwen3-4B-Instruct-2507"]
    assert abs(q4.params() / 1e9 - 4.02) < 0.01
    assert abs(KNOWN["Qwen/Qwen3-30B-A3B-Instruct-2507"].params(active=True) / 1e9 - 3.3) < 0.1
    assert abs(attention_share(q4, 150_000) - 5.5) < 0.1
    e = estimate(q4, world_size=8, sp_size=8, seq_len=150_000, grad_accum=8)
    assert abs(e.model_states_gb - 8.0) < 0.1 and abs(e.checkpointed_activations_gb - 3.5) < 0.1
    assert 20 <= e.total_gb <= 30 and e.fits  # field notes: about 20-30 GB per GPU
    assert e.total_gb < e.calibrated_total_gb < 80  # still fits when scaled to the measured ALST anchor
    # HF ALST blog: Qwen3-4B, SP=4 on 4xH100 at 64k: 13.4k tok/s total at ~28% MFU
    blog = estimate(q4, world_size=4, sp_size=4, seq_len=65_536, assumed_mfu=0.28)
    assert abs(blog.tokens_per_s_per_gpu * 4 - 13_400) / 13_400 < 0.1


def test_jsonl_with_json_string_columns_and_a_parquet_twin(tok, template, tmp_path):
    """The synthesizer writes dataset/train.jsonl (tools as a JSON string) and train.parquet side by side."""
    import datasets

    row = ROWS[1]
    d = tmp_path / "dataset"
    d.mkdir()
    (d / "train.jsonl").write_text(json.dumps({**row, "tools": json.dumps(row["tools"]), "num_tokens": 1}) + "\n")
    datasets.Dataset.from_list([row]).to_parquet(d / "train.parquet")
    ds = load_rows(d)
    assert len(ds) == 1 and ds[0]["row_id"] == row["id"]
    got = encode_row(tok, template, ds[0]["messages"], ds[0]["tools"], max_length=None, overlong="drop")
    ref = encode_row(tok, template, row["messages"], row["tools"], max_length=None, overlong="drop")
    assert got["input_ids"] == ref["input_ids"] and "run_read_only_sql" in tok.decode(got["input_ids"])
