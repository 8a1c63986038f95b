"""Figures of the benchmarks (matplotlib, Agg backend, written atomically).

Every figure colours a method by :func:`method_color`, so a method keeps its colour across runs
and figures whatever other methods it is shown with.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
)
FIXED_COLORS = {
    "learned": "#d62728", "sw": "#1f77b4", "blastp": "#7f7f7f", "psiblast": "#8c564b",
    "mmseqs": "#bcbd22", "phmmer": "#17becf", "jackhmmer": "#9467bd", "pssm@3": "#2ca02c",
    "hhm": "#ff7f0e", "learned@3": "#e377c2",
}
"""The colours of the methods the project's figures show most (others: :func:`method_color`)."""


def method_color(method: str) -> str:
    """A method's colour: fixed for the common ones, else from a hash of its name (stable across
    runs and processes, unlike Python's ``hash``)."""
    import zlib

    if method in FIXED_COLORS:
        return FIXED_COLORS[method]
    return PALETTE[zlib.crc32(method.encode()) % len(PALETTE)]


IDENTITY_BINS = np.linspace(0.0, 1.0, 11)
"""Reference-identity bin edges: 0-10%, 10-20%, ..., 90-100% (the last bin includes 100%)."""


def binned_means(
    identities: np.ndarray, values: np.ndarray, edges: np.ndarray = IDENTITY_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin centres, mean value and count per identity bin (NaN mean for an empty bin)."""
    identities = np.asarray(identities, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    idx = np.clip(np.digitize(identities, edges[1:-1]), 0, len(edges) - 2)
    counts = np.bincount(idx, minlength=len(edges) - 1)
    sums = np.bincount(idx, weights=values, minlength=len(edges) - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    centres = (edges[:-1] + edges[1:]) / 2
    return centres, means, counts


def plot_f1_vs_identity(pair_rows: Iterable[Mapping], path: str | Path, *,
                        dataset: str | None = None) -> Path:
    """Mean F1 per reference-identity bin, one line per method, saved as PNG at ``path``.

    ``pair_rows`` are the rows of ``pairs.csv`` (keys ``method``, ``ref_identity``, ``F1``). The
    title names ``dataset`` (default: the output folder) and the pairs per method; the legend
    sits outside the axes, right of them.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from homalign.io.atomic import atomic_write

    by_method: dict[str, tuple[list[float], list[float]]] = {}
    for row in pair_rows:
        ident = float(row["ref_identity"])
        if math.isnan(ident):
            continue
        ids, f1 = by_method.setdefault(str(row["method"]), ([], []))
        ids.append(ident)
        f1.append(float(row["F1"]))
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    try:
        counts = None
        for method, (ids, f1) in by_method.items():
            centres, means, counts = binned_means(np.array(ids), np.array(f1))
            keep = counts > 0
            ax.plot(100 * centres[keep], means[keep], marker="o", label=method,
                    color=method_color(method))
        if counts is not None:
            for c, n in zip(centres, counts, strict=True):
                if n:
                    ax.annotate(f"n={n}", (100 * c, 0.02), ha="center", fontsize=7, color="0.4")
        ax.axvline(30, color="0.7", linestyle="--", linewidth=0.8)
        ax.set_xlabel("reference sequence identity (%)")
        ax.set_ylabel("mean F1 vs structure-based reference")
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        n_pairs = sorted({len(ids) for ids, _ in by_method.values()})
        n_text = (f"n = {n_pairs[0]} pairs" if len(n_pairs) == 1
                  else f"n = {n_pairs[0]}-{n_pairs[-1]} pairs per method" if n_pairs else "n = 0")
        name = dataset if dataset is not None else Path(path).resolve().parent.name
        ax.set_title(f"Alignment benchmark: {name} ({n_text})", fontsize=10)
        if by_method:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
    finally:
        plt.close(fig)
    out = Path(path)
    with atomic_write(out, "wb") as fh:
        fh.write(buf.getvalue())
    return out


__all__ = ["IDENTITY_BINS", "binned_means", "method_color", "plot_f1_vs_identity"]
