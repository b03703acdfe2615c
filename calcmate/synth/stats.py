"""Statistics report of a synthesis run: ``stats.json`` numbers, ``report.md`` and PNG plots.

Tool calls per trajectory against the paper's Table 3 (CalcMate-4B), calculators per task, domain
balance, token lengths against the 150k training limit, rejection reasons, calculator coverage.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import mean, median
from typing import Any

from calcmate.io import atomic_write_json, atomic_write_text

PAPER_TABLE3 = {"sql": 7.97, "python": 7.32, "search": 8.16, "fetch": 8.07}  # CalcMate-4B, calls per task
PAPER_TRAINING = {"tasks": 1005, "calculators_per_task": 9.05, "unique_calculators": 637}
MAX_TOKENS = 150_000


def summarize(rows: list[dict[str, Any]], records: list[dict[str, Any]], *, n_registry: int | None = None,
              decontam: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The numbers of ``stats.json``. ``records`` are the per-task outcome records of the run."""
    rejected = Counter()
    attempts = Counter()
    for r in records:
        for reason in r.get("rejections", []):
            rejected[reason.get("reason", "unknown")] += 1
        attempts[r.get("status", "unknown")] += 1
    tokens = [r["num_tokens"] for r in rows]
    calls = {k: [r["tool_calls"].get(k, 0) for r in rows] for k in PAPER_TABLE3}
    coverage = Counter(c for r in rows for c in r.get("calculator_ids") or r["calculators"])
    out: dict[str, Any] = {
        "tasks_attempted": len(records),
        "trajectories_kept": attempts.get("kept", 0),
        "tasks_failed": {k: v for k, v in attempts.items() if k != "kept"},
        "rejected_by_reason": dict(rejected),
        "attempts_total": sum(r.get("attempts", 0) for r in records),
        "averages": {
            "tool_calls": {k: round(mean(v), 2) if v else 0.0 for k, v in calls.items()},
            "calculators_per_task": round(mean(r["n_calculators"] for r in rows), 2) if rows else 0.0,
            "tokens": round(mean(tokens), 1) if tokens else 0.0,
            "attempts_per_kept": round(mean(r.get("attempts", 1) for r in rows), 2) if rows else 0.0,
        },
        "tokens": {"median": median(tokens) if tokens else 0, "max": max(tokens) if tokens else 0,
                   "over_150k": sum(t > MAX_TOKENS for t in tokens),
                   "method": sorted({r.get("token_count_method", "") for r in rows})},
        "domains": dict(Counter(r["domain"] for r in rows)),
        "calculator_coverage": {"unique": len(coverage), "registry": n_registry,
                                "share": round(len(coverage) / n_registry, 3) if n_registry else None,
                                "top": coverage.most_common(15)},
        "paper": {"table3_calcmate_4b": PAPER_TABLE3, "training_data": PAPER_TRAINING},
    }
    if decontam is not None:
        out["decontamination"] = {"dropped": len(decontam), "hits": decontam[:50]}
    if extra:
        out.update(extra)
    return out


def plot(rows: list[dict[str, Any]], stats: dict[str, Any], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    kinds = list(PAPER_TABLE3)
    ours = [stats["averages"]["tool_calls"][k] for k in kinds]
    x = range(len(kinds))
    ax[0, 0].bar([i - 0.2 for i in x], ours, 0.4, label="this run")
    ax[0, 0].bar([i + 0.2 for i in x], [PAPER_TABLE3[k] for k in kinds], 0.4, label="paper CalcMate-4B")
    ax[0, 0].set_xticks(list(x), kinds)
    ax[0, 0].set_title("Tool calls per trajectory")
    ax[0, 0].legend()
    ax[0, 1].hist([r["n_calculators"] for r in rows], bins=range(1, 12))
    ax[0, 1].set_title("Calculators per task")
    dom = stats["domains"]
    ax[0, 2].barh(list(dom), list(dom.values()))
    ax[0, 2].set_title("Domain balance")
    ax[1, 0].hist([r["num_tokens"] for r in rows], bins=30)
    ax[1, 0].axvline(MAX_TOKENS, color="r", linestyle="--", label="150k limit")
    ax[1, 0].set_title("Tokens per trajectory (Qwen3 template)")
    ax[1, 0].legend()
    rej = stats["rejected_by_reason"] or {"none": 0}
    ax[1, 1].barh(list(rej), list(rej.values()))
    ax[1, 1].set_title("Rejections by reason")
    cov = [n for _, n in stats["calculator_coverage"]["top"]]
    ax[1, 2].bar(range(len(cov)), cov)
    ax[1, 2].set_title(f"Calculator use (top 15 of {stats['calculator_coverage']['unique']})")
    fig.tight_layout()
    p = out_dir / "synthesis_stats.png"
    fig.savefig(p, dpi=90)
    plt.close(fig)
    return [p]


def markdown(stats: dict[str, Any], plots: list[Path]) -> str:
    a = stats["averages"]
    lines = [
        "# Synthesis report", "",
        f"- Tasks attempted: {stats['tasks_attempted']}; trajectories kept: {stats['trajectories_kept']}",
        f"- Failed tasks by status: {stats['tasks_failed'] or 'none'}",
        f"- Calculators per task: {a['calculators_per_task']} (paper training data: {PAPER_TRAINING['calculators_per_task']})",
        f"- Tokens per trajectory: mean {a['tokens']}, median {stats['tokens']['median']}, max {stats['tokens']['max']}; "
        f"over 150k: {stats['tokens']['over_150k']} (counted by {', '.join(stats['tokens']['method']) or 'n/a'})",
        f"- Calculator coverage: {stats['calculator_coverage']['unique']} unique of {stats['calculator_coverage']['registry']} in the registry",
        "", "## Tool calls per trajectory", "", "| | SQL | Python | Search | Fetch |", "|---|---|---|---|---|",
        "| this run | " + " | ".join(f"{a['tool_calls'][k]:.2f}" for k in PAPER_TABLE3) + " |",
        "| paper CalcMate-4B (Table 3) | " + " | ".join(f"{PAPER_TABLE3[k]:.2f}" for k in PAPER_TABLE3) + " |",
        "", "## Domain balance", "", "| domain | trajectories |", "|---|---|",
        *[f"| {d} | {n} |" for d, n in sorted(stats["domains"].items())],
        "", "## Rejections by reason", "", "| reason | count |", "|---|---|",
        *([f"| {r} | {n} |" for r, n in sorted(stats["rejected_by_reason"].items())] or ["| none | 0 |"]),
    ]
    if "decontamination" in stats:
        lines += ["", "## Decontamination", "", f"Dropped {stats['decontamination']['dropped']} tasks overlapping the benchmark files."]
    lines += ["", *[f"![{p.stem}]({p.name})" for p in plots], ""]
    return "\n".join(lines)


def write_report(rows: list[dict[str, Any]], records: list[dict[str, Any]], out_dir: str | Path, **kw: Any) -> dict[str, Any]:
    out = Path(out_dir)
    stats = summarize(rows, records, **kw)
    plots = plot(rows, stats, out) if rows else []
    atomic_write_json(out / "stats.json", stats)
    atomic_write_text(out / "report.md", markdown(stats, plots))
    return stats
