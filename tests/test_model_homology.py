"""Homology head: a logistic fit on Karlin-Altschul features is calibrated on synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from homalign.model.homology import fit_homology_head, homology_probability


def test_fit_recovers_a_known_logistic_model_and_is_calibrated() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    lq = rng.integers(50, 400, n)
    lt = rng.integers(50, 400, n)
    score = rng.normal(30, 15, n)
    true = {"a": 0.3, "b": 1.0, "c": 2.0}
    p = np.array([homology_probability(true, s, a, b) for s, a, b in zip(score, lq, lt, strict=True)])
    y = (rng.random(n) < p).astype(int)
    head = fit_homology_head(score, lq, lt, y)
    assert head["a"] == pytest.approx(0.3, rel=0.2)
    assert head["b"] == pytest.approx(1.0, rel=0.3)
    fitted = np.array([homology_probability(head, s, a, b)
                       for s, a, b in zip(score, lq, lt, strict=True)])
    for lo in (0.0, 0.25, 0.5, 0.75):
        sel = (fitted >= lo) & (fitted < lo + 0.25)
        assert abs(y[sel].mean() - fitted[sel].mean()) < 0.06


def test_probability_grows_with_score_and_falls_with_length() -> None:
    head = {"a": 0.5, "b": 1.0, "c": 0.0}
    assert homology_probability(head, 40, 100, 100) > homology_probability(head, 20, 100, 100)
    assert homology_probability(head, 40, 100, 100) > homology_probability(head, 40, 400, 400)
    assert homology_probability(head, -5000, 100, 100) == 0.0
    assert 0 < homology_probability(head, 2 * math.log(1e4), 100, 100) < 1


def test_fit_rejects_single_class_labels() -> None:
    with pytest.raises(ValueError):
        fit_homology_head(np.ones(5), np.ones(5) * 10, np.ones(5) * 10, np.ones(5))


def _scop_fasta(tmp_path, folds: list[str], per_fold: int = 4) -> tuple[str, list[str]]:
    from homalign.stats import random_sequences

    rng = np.random.default_rng(3)
    lines, ids = [], []
    for f in folds:
        for k, s in enumerate(random_sequences(per_fold, rng, 60, 160)):
            ids.append(f"d{f.replace('.', '')}{k}_")
            lines += [f">{ids[-1]} {f}.1.1 (A:) test", s.lower()]
    path = tmp_path / "scop.fa"
    path.write_text("\n".join(lines) + "\n")
    return str(path), ids


def test_null_fit_pairs_are_cross_fold_and_avoid_dev_and_tuning_folds(tmp_path) -> None:
    from homalign.evaluate.homology import is_heldout_fold
    from homalign.model.homology import null_fit_pairs

    assert is_heldout_fold("a.9") and not is_heldout_fold("a.1")  # a.9: a tuning fold
    fa, ids = _scop_fasta(tmp_path, ["a.1", "a.2", "a.3", "a.9"])
    dev = {ids[4]}  # a dev query of fold a.2: the whole fold stays out
    pairs = null_fit_pairs(fa, dev, 200)
    assert len(pairs) == 200
    fold = {i: i[1:3] for i in ids}  # "a1", "a2", ... from the id
    seen = set()
    for a, b in pairs:
        assert fold[a.id] != fold[b.id]
        seen |= {fold[a.id], fold[b.id]}
    assert seen == {"a1", "a3"}
    with pytest.raises(ValueError, match="fewer than two folds"):
        null_fit_pairs(fa, {ids[0], ids[4]}, 10)  # only a.3 is left


def test_fit_null_cli_stores_a_null_that_search_uses(tmp_path) -> None:
    import json
    import shutil
    from importlib import resources

    from homalign.model.homology import main
    from homalign.model.weights import load_model
    from homalign.stats import EVDParams

    base = resources.files("homalign").joinpath("weights")
    for ext in ("safetensors", "json"):
        shutil.copy(str(base.joinpath(f"learned.{ext}")), tmp_path / f"w.{ext}")
    before = json.loads((tmp_path / "w.json").read_text())
    before.pop("null", None)
    (tmp_path / "w.json").write_text(json.dumps(before))
    fa, ids = _scop_fasta(tmp_path, ["a.1", "a.2", "a.3", "b.1"], per_fold=6)
    excl = tmp_path / "dev.txt"
    excl.write_text(ids[-1] + "\n")
    assert main(["--weights", str(tmp_path / "w"), "--null-pairs", "80", "--no-head",
                 "--fasta", fa, "--exclude", str(excl)]) == 0
    after = json.loads((tmp_path / "w.json").read_text())
    assert {k: v for k, v in after.items() if k != "null"} == before  # the head is kept
    params = EVDParams(**after["null"]["params"])
    assert after["null"]["pairs"] == 80 and params.gamma is not None and params.lam > 0
    assert "80 cross-fold SCOPe train-fold pairs" in params.source
    _, meta = load_model(tmp_path / "w")
    assert meta["null"] == after["null"]
    with pytest.raises(SystemExit):
        main(["--weights", str(tmp_path / "w"), "--no-head"])
