"""The output every eval writes: results.json, results.md (a Markdown table) and results.png (per-metric
bars and the latency distribution), plus the summary table printed in the terminal.

An eval hands over `metrics` (name -> score in [0, 1], or None when nothing could be scored), `info`
(counts and settings, shown as they are), the per-question latencies in seconds and the per-question
rows (JSON only); optionally `rates` (name -> share in [0, 1] or None), drawn in the chart as bars of
their own colour below the metrics (`eval rag`: the decline rate on unanswerable questions and the
answer rate on answerable ones).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["latency_summary", "summary_table", "write_report"]


def latency_summary(latencies: Sequence[float]) -> dict[str, float | None]:
    """Mean, p50, p95 and max in seconds (None when there were no questions)."""
    import numpy as np

    if not latencies:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    values = np.asarray(latencies, dtype=float)
    return {
        "mean": round(float(values.mean()), 4),
        "p50": round(float(np.percentile(values, 50)), 4),
        "p95": round(float(np.percentile(values, 95)), 4),
        "max": round(float(values.max()), 4),
    }


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _markdown(
    title: str, metrics: dict[str, float | None], info: dict[str, Any], latency: dict[str, float | None]
) -> str:
    lines = [f"# {title}", "", "| metric | score |", "|---|---:|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in metrics.items()]
    lines += ["", "| | |", "|---|---:|"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in info.items()]
    lines += [f"| latency {key} (s) | {_cell(value)} |" for key, value in latency.items()]
    return "\n".join(lines) + "\n"


def _chart(
    path: Path,
    title: str,
    metrics: dict[str, float | None],
    latencies: Sequence[float],
    rates: dict[str, float | None] | None = None,
) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server or in CI
    import matplotlib.pyplot as plt

    scored = {name: value for name, value in metrics.items() if value is not None}
    rates = rates or {}
    labels = list(scored) + list(rates)
    values = list(scored.values()) + [value or 0.0 for value in rates.values()]
    colors = ["#4c72b0"] * len(scored) + ["#55a868"] * len(rates)
    fig, (bars, hist) = plt.subplots(
        1, 2, figsize=(13, max(5, 0.32 * len(labels) + 1.5)), gridspec_kw={"width_ratios": [2, 1]}
    )
    bars.barh(range(len(labels)), values, color=colors)
    bars.set_yticks(range(len(labels)), labels)
    bars.invert_yaxis()
    bars.set_xlim(0, 1)
    bars.set_xlabel("score / rate")
    shown = list(scored.values()) + list(rates.values())
    for i, value in enumerate(shown):
        if value is None:  # e.g. a decline rate without unanswerable questions
            bars.text(0.01, i, "n/a (no such questions)", va="center", ha="left", color="gray")
            continue
        inside = value > 0.85  # no room right of a long bar: write inside it
        bars.text(
            value - 0.01 if inside else value + 0.01,
            i,
            f"{value:.3f}",
            va="center",
            ha="right" if inside else "left",
            color="white" if inside else "black",
        )
    if scored and rates:  # the rates below a dashed line, in their own colour
        bars.axhline(len(scored) - 0.5, color="gray", linewidth=0.8, linestyle="--")
    bars.set_title(title)
    hist.hist(latencies, bins=min(30, max(5, len(latencies) // 5)), color="#dd8452")
    hist.set_xlabel("seconds per question")
    hist.set_ylabel("questions")
    hist.set_title("latency")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(
    out_dir: Path,
    *,
    title: str,
    metrics: dict[str, float | None],
    info: dict[str, Any],
    latencies: Sequence[float],
    items: list[dict[str, Any]],
    rates: dict[str, float | None] | None = None,
) -> dict[str, str]:
    """Write results.json, results.md and results.png into `out_dir`; returns their paths by kind.
    `rates` are drawn in the chart beside the metrics (they belong in `info` too, for the tables)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    latency = latency_summary(latencies)
    paths = {"json": out_dir / "results.json", "markdown": out_dir / "results.md", "chart": out_dir / "results.png"}
    paths["json"].write_text(
        json.dumps(
            {"title": title, "metrics": metrics, "info": info, "latency": latency, "items": items},
            ensure_ascii=False,
            indent=2,
            default=str,
        )
        + "\n",
        encoding="utf-8",
    )
    paths["markdown"].write_text(_markdown(title, metrics, info, latency), encoding="utf-8")
    _chart(paths["chart"], title, metrics, latencies, rates)
    return {kind: str(path) for kind, path in paths.items()}


def summary_table(title: str, metrics: dict[str, float | None], info: dict[str, Any], latencies: Sequence[float]):
    """A rich Table of the metrics, the info and the latency summary, for the terminal."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in metrics.items():
        table.add_row(name, _cell(value))
    table.add_section()
    for key, value in info.items():
        table.add_row(key, _cell(value))
    for key, value in latency_summary(latencies).items():
        table.add_row(f"latency {key} (s)", _cell(value))
    return table
