"""MkDocs hook: draw the benchmark ratios from ``benchmarks/results.json`` at
build time, so the plot on the Benchmarks page always shows the recorded
figures.

Each case with a ratio target gets a bar (its median divided by its baseline's
median, on a log scale) and a mark at its target; bars within target are green,
the others red.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import matplotlib
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

matplotlib.use("Agg")

PLOT = "diagrams/benchmark-ratios.png"
# a size in a case's name, shown from its event count instead
SIZE = r" [(][0-9]+k[)]$"


def _results(config: MkDocsConfig) -> list[dict[str, Any]]:
    path = Path(config.config_file_path).parent / "benchmarks" / "results.json"
    rows: list[dict[str, Any]] = json.loads(path.read_text())
    return [row for row in rows if row.get("target") is not None]


def _count(events: int) -> str:
    """``10M``, ``100k``: an event count for a label."""
    return (
        f"{events // 1_000_000}M"
        if events >= 1_000_000
        else f"{events // 1_000}k"
    )


def render(rows: list[dict[str, Any]]) -> bytes:
    """The bar chart of ``rows`` (case, ratio, target) as a PNG."""
    import matplotlib.pyplot as plt

    names = [
        f"{re.sub(SIZE, '', row['case'])}, {_count(row['events'])}"
        for row in rows
    ]
    ratios = [row["ratio"] for row in rows]
    targets = [row["target"] for row in rows]
    colors = [
        "#2e7d32" if r <= t else "#c62828"
        for r, t in zip(ratios, targets, strict=True)
    ]
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.2), dpi=110)
    y = list(range(len(rows)))[::-1]
    ax.barh(y, ratios, color=colors, height=0.6)
    ax.scatter(
        targets, y, marker="|", s=600, color="black", zorder=3, label="target"
    )
    for yi, ratio, target in zip(y, ratios, targets, strict=True):
        ax.text(
            max(ratio, target) * 1.08,
            yi,
            f"{ratio:.2f}",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(
        "time / hand-written baseline's time (log scale; lower is better)"
    )
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
    )
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the plot to the site as ``diagrams/benchmark-ratios.png``."""
    files.append(File.generated(config, PLOT, content=render(_results(config))))
    return files
