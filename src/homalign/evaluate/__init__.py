"""Alignment-quality evaluation against structure-based references, and the benchmark harness.

- :mod:`~homalign.evaluate.reference`: reference pairs from HOMSTRAD / TM-align PIR families.
- :mod:`~homalign.evaluate.metrics`: S_dev, S_mod, balanced, precision, recall, F1.
- :mod:`~homalign.evaluate.alignment_benchmark`: every method on every pair, CSVs and a plot.
- :mod:`~homalign.evaluate.plots`: the F1-vs-identity figure.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from homalign.evaluate.alignment_benchmark import run_alignment_benchmark
from homalign.evaluate.metrics import PairMetrics, score_pair, summarise
from homalign.evaluate.reference import ReferencePair, load_reference_pairs


def bundled_homstrad_dev() -> Path:
    """The directory of the 80 HOMSTRAD dev families shipped with the package (see data/README.md)."""
    path = Path(str(resources.files("homalign") / "data" / "homstrad_dev"))
    if not path.is_dir():
        raise FileNotFoundError(f"bundled HOMSTRAD dev data missing at {path}")
    return path


__all__ = [
    "PairMetrics", "ReferencePair", "bundled_homstrad_dev", "load_reference_pairs",
    "run_alignment_benchmark", "score_pair", "summarise",
]
