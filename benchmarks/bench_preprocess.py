"""Tokenization + assistant-mask throughput of the SFT data prep (calcmate.training.data), on CPU.

  python benchmarks/bench_preprocess.py [--count 1000] [--min-tokens 20000] [--max-tokens 150000] [--num-proc 2]

Builds synthetic tool trajectories (system, user, then assistant tool calls / tool results until the target
length, then a final answer) with lengths uniform in [min, max] tokens, and times ``encode_dataset`` (the exact
path train/sft.py runs) in one process and with ``datasets.map(num_proc=N)``. Uses the locally built tiny
tokenizer unless --tokenizer names a local HF tokenizer dir (e.g. a downloaded Qwen3-4B-Instruct-2507).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = ("patient creatinine clearance sodium potassium glucose weight age score risk formula result value unit "
         "SELECT FROM WHERE lab_results vital_signs admissions the of and to in is for with heart rate blood "
         "pressure temperature oxygen GCS SOFA MELD mg dL mmol kg").split()


def synth_row(rng: random.Random, target_chars: int, k: int) -> dict:
    tools = [{"type": "function", "function": {"name": n, "description": f"{n} tool",
              "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
             for n in ("run_read_only_sql", "describe_tables", "search", "fetch", "run_python")]
    msgs = [{"role": "system", "content": "You are CalcMate."},
            {"role": "user", "content": "Assess the patient. " + " ".join(rng.choices(WORDS, k=40))}]
    size, i = 0, 0
    while size < target_chars:
        i += 1
        name = rng.choice(tools)["function"]["name"]
        args = json.dumps({"q": " ".join(rng.choices(WORDS, k=rng.randint(5, 30)))})
        thought = " ".join(rng.choices(WORDS, k=rng.randint(0, 40)))
        result = " ".join(f"{w} {rng.randint(0, 300)}" for w in rng.choices(WORDS, k=rng.randint(50, 600)))
        msgs.append({"role": "assistant", "content": thought, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
        size += len(thought) + len(args) + len(result) + 60
    msgs.append({"role": "assistant", "content": "Final answer: " + " ".join(rng.choices(WORDS, k=30))})
    return {"id": f"bench-{k}", "messages": msgs, "tools": tools}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="number of trajectories (the issue asks 1,000)")
    p.add_argument("--min-tokens", type=int, default=20_000)
    p.add_argument("--max-tokens", type=int, default=150_000)
    p.add_argument("--num-proc", type=int, default=2)
    p.add_argument("--tokenizer", type=Path, default=None, help="local HF tokenizer dir (default: tiny BPE)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from datasets import disable_caching
    from transformers import AutoTokenizer

    from calcmate.training.data import encode_dataset, load_rows, resolve_training_template
    from calcmate.training.tiny import build_tokenizer

    disable_caching()  # time the work, not the datasets cache
    tok = AutoTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else build_tokenizer()
    template = resolve_training_template(tok)
    rng = random.Random(args.seed)
    probe = synth_row(rng, 20_000, -1)
    from calcmate.training.data import encode_row

    chars_per_token = len(json.dumps(probe["messages"])) / len(
        encode_row(tok, template, probe["messages"], probe["tools"], max_length=None, overlong="drop")["input_ids"])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "rows.jsonl"
        with open(path, "w") as f:
            for k in range(args.count):
                target = rng.randint(args.min_tokens, args.max_tokens)
                f.write(json.dumps(synth_row(rng, int(target * chars_per_token * 1.08), k)) + "\n")
        rows = load_rows(path)
        print(f"{args.count} trajectories, {path.stat().st_size / 1e6:.0f} MB of JSONL; tokenizer: "
              f"{args.tokenizer or 'tiny BPE (local)'}")
        for num_proc in (None, args.num_proc):
            t0 = time.perf_counter()
            _, st = encode_dataset(rows, tok, template, max_length=None, overlong="truncate", num_proc=num_proc)
            dt = time.perf_counter() - t0
            print(f"num_proc={num_proc or 1}: {st.tokens:,} tokens in {dt:.1f} s -> {st.tokens / dt:,.0f} tokens/s "
                  f"({args.count / dt:.2f} trajectories/s); lengths p50 {st.length_p50:,} max {st.length_max:,}; "
                  f"trained fraction {st.trained_fraction:.3f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
