"""Figures of the alignment benchmark (matplotlib, Agg backend, written atomically)."""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

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


def plot_f1_vs_identity(pair_rows: Iterable[Mapping], path: str | Path) -> Path:
    """Mean F1 per reference-identity bin, one line per method, saved as PNG at ``path``.

    ``pair_rows`` are the rows of ``pairs.csv`` (keys ``method``, ``ref_identity``, ``F1``).
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
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        counts = None
        for method, (ids, f1) in by_method.items():
            centres, means, counts = binned_means(np.array(ids), np.array(f1))
            keep = counts > 0
            ax.plot(100 * centres[keep], means[keep], marker="o", label=method)
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
        if by_method:
            ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
    finally:
        plt.close(fig)
    out = Path(path)
    with atomic_write(out, "wb") as fh:
        fh.write(buf.getvalue())
    return out


__all__ = ["IDENTITY_BINS", "binned_means", "plot_f1_vs_identity"]
