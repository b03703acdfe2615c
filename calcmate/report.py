"""Tables and plots for evaluation runs: the paper's Table 2 (TF/CS/EA/QP overall and per
domain) and Table 3 (tool calls per task), a per-domain bar chart, and the sweep leaderboard
with its metric-versus-step plot."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calcmate.domains import Domain
from calcmate.io import atomic_write_text

METRICS = ("TF", "CS", "EA", "QP")
SHORT = {
    Domain.MEDICINE.value: "Medicine",
    Domain.CRITICAL_CARE.value: "Emerg./Crit. Care",
    Domain.SPECIAL_POPULATIONS.value: "Special Pop.",
    Domain.NEUROLOGY.value: "Neuro./Mental",
}


def _fmt(x: Any) -> str:
    return "–" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def table2(scores: dict[str, Any], name: str) -> str:
    """One row per run: each domain's TF/CS/EA/QP, then Overall (the paper's Table 2 layout)."""
    domains = [d.value for d in Domain if d.value in scores.get("per_domain", {})]
    head = ["Model"] + [f"{SHORT.get(d, d)} {m}" for d in domains for m in METRICS] + [f"Overall {m}" for m in METRICS]
    row = [name] + [_fmt(scores["per_domain"][d].get(m)) for d in domains for m in METRICS]
    row += [_fmt(scores["overall"].get(m)) for m in METRICS]
    return _md(head, [row])


def table3(scores: dict[str, Any], name: str) -> str:
    """Average tool calls per task (the paper's Table 3), plus extra calculators, rounds, tokens."""
    o = scores["overall"]
    t = o.get("tool_calls_per_task", {})
    head = ["Model", "SQL", "Python", "Search", "Fetch", "Extra calculators", "Rounds", "Prompt tok.", "Completion tok."]
    row = [name, *(_fmt(t.get(k)) for k in ("sql", "python", "search", "fetch")),
           _fmt(o.get("extra_calculators_per_task")), _fmt(o.get("rounds_per_task")),
           _fmt(o.get("prompt_tokens_per_task")), _fmt(o.get("completion_tokens_per_task"))]
    return _md(head, [row])


def _md(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot_domains(scores: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = ["Overall"] + [SHORT.get(d, d) for d in scores.get("per_domain", {})]
    data = [scores["overall"]] + list(scores.get("per_domain", {}).values())
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(METRICS)
    for k, m in enumerate(METRICS):
        ax.bar([i + k * width for i in range(len(groups))], [d.get(m, 0) or 0 for d in data], width, label=m)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups, fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.set_title(title)
    ax.legend(ncol=4, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(out_dir: Path, scores: dict[str, Any], name: str, notes: str = "") -> Path:
    """DIR/report.md with Tables 2 and 3 and DIR/metrics.png."""
    out_dir = Path(out_dir)
    plot_domains(scores, out_dir / "metrics.png", f"{name}: MedMCP-Calc metrics")
    o = scores["overall"]
    text = (
        f"# Evaluation: {name}\n\n{o.get('n_tasks', 0)} tasks. Scores in percent, averaged per task.\n\n"
        f"## Table 2: task finish (TF), calculator selection (CS), EHR access (EA), quantitative precision (QP)\n\n"
        f"{table2(scores, name)}\n## Table 3: average tool calls per task\n\n{table3(scores, name)}\n"
        f"![metrics](metrics.png)\n\n{notes}"
    )
    atomic_write_text(out_dir / "report.md", text)
    return out_dir / "report.md"


# -- sweep -------------------------------------------------------------------------------------
LEADER_COLS = ("checkpoint", "step", "n_tasks", *METRICS, "sql", "python", "search", "fetch")


def leaderboard_rows(runs: Sequence[tuple[str, int | None, dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for name, step, s in runs:
        o = s["overall"]
        t = o.get("tool_calls_per_task", {})
        rows.append({"checkpoint": name, "step": step, "n_tasks": o.get("n_tasks"), **{m: o.get(m) for m in METRICS},
                     **{k: t.get(k) for k in ("sql", "python", "search", "fetch")}})
    return sorted(rows, key=lambda r: (r["step"] is None, r["step"] or 0, r["checkpoint"]))


def write_leaderboard(out_dir: Path, rows: list[dict[str, Any]]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(LEADER_COLS))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(Path(out_dir) / "leaderboard.csv", buf.getvalue())
    ranked = sorted(rows, key=lambda r: -(r.get("QP") or 0))
    md = _md(LEADER_COLS, [[_fmt(r.get(c)) for c in LEADER_COLS] for r in ranked])
    atomic_write_text(Path(out_dir) / "leaderboard.md", "# Checkpoint leaderboard (by QP)\n\n" + md)
    plot_vs_step(rows, Path(out_dir) / "metrics_vs_step.png")


def plot_vs_step(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [r for r in rows if r.get("step") is not None]
    fig, ax = plt.subplots(figsize=(7, 4))
    for m in METRICS:
        ax.plot([r["step"] for r in pts], [r.get(m) or 0 for r in pts], marker="o", label=m)
    ax.set_xlabel("training step")
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.legend()
    ax.set_title("MedMCP-Calc metrics by checkpoint")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- comparing runs on the terminal ----------------------------------------------------------------
# The paper's overall Table 2 rows (MedMCP-Calc, full 118 tasks, LLM-judged), for context only:
# our deterministic scores on the dev sample are not directly comparable (docs/scoring.md).
PAPER_ROWS: dict[str, dict[str, float]] = {
    "Qwen3-4B base (paper)": {"TF": 100.0, "CS": 19.95, "EA": 9.34, "QP": 3.08},
    "CalcMate-4B (paper)": {"TF": 100.0, "CS": 56.97, "EA": 71.06, "QP": 15.02},
}


def compare_table(runs: Sequence[tuple[str, dict[str, Any]]], *, paper: bool = True):
    """A rich table of overall TF/CS/EA/QP and tool calls per task for several runs."""
    from rich.table import Table

    t = Table(title="MedMCP-Calc (overall, percent)")
    for col in ("run", "tasks", *METRICS, "SQL", "Python", "Search", "Fetch"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for name, s in runs:
        o = s["overall"]
        calls = o.get("tool_calls_per_task", {})
        t.add_row(name, str(o.get("n_tasks", "")), *(_fmt(o.get(m)) for m in METRICS),
                  *(_fmt(calls.get(k)) for k in ("sql", "python", "search", "fetch")))
    if paper:
        for name, row in PAPER_ROWS.items():
            t.add_row(f"[dim]{name}[/dim]", "118", *(f"[dim]{row[m]:.2f}[/dim]" for m in METRICS), "", "", "", "")
    return t


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import json

    from rich.console import Console

    p = argparse.ArgumentParser(
        prog="python -m calcmate.report",
        description="Print the overall metrics of one or more eval runs (DIR/scores.json) side by side, "
        "with the paper's Table 2 rows for context.")
    p.add_argument("scores", nargs="+", type=Path, help="scores.json files written by eval/evaluate.py")
    p.add_argument("--names", nargs="+", help="a display name per file (default: the parent directory name)")
    p.add_argument("--no-paper", action="store_true", help="leave out the paper's reference rows")
    a = p.parse_args(argv)
    names = a.names or [s.parent.name for s in a.scores]
    if len(names) != len(a.scores):
        p.error(f"--names gives {len(names)} names for {len(a.scores)} score files")
    runs = [(n, json.loads(s.read_text())) for n, s in zip(names, a.scores)]
    console = Console()
    if not console.is_terminal:  # logs and CI: don't wrap the table at 80 columns
        console = Console(width=140)
    console.print(compare_table(runs, paper=not a.no_paper))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
