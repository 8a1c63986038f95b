"""Homology head: a logistic fit on Karlin-Altschul features is calibrated on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from homalign.model.homology import fit_homology_head, homology_probability, standardized_score


def test_fit_recovers_a_known_logistic_model_and_is_calibrated() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(2.0, 4.0, 4000)
    true = {"a": 0.7, "c": -1.5}
    p = np.array([homology_probability(true, x) for x in z])
    y = (rng.random(len(z)) < p).astype(int)
    head = fit_homology_head(z, y)
    assert head["a"] == pytest.approx(0.7, rel=0.15)
    assert head["c"] == pytest.approx(-1.5, abs=0.3)
    fitted = np.array([homology_probability(head, x) for x in z])
    for lo in (0.0, 0.25, 0.5, 0.75):
        sel = (fitted >= lo) & (fitted < lo + 0.25)
        assert abs(y[sel].mean() - fitted[sel].mean()) < 0.06


def test_probability_grows_with_the_standardised_score_which_falls_with_length() -> None:
    from homalign.model import load_bundled

    head = {"a": 0.5, "c": 0.0}
    assert homology_probability(head, 10.0) > homology_probability(head, 2.0) > 0.5
    assert homology_probability(head, -5000.0) == 0.0
    _, meta = load_bundled("learned_search")
    z = [standardized_score(meta, 40.0, n, n) for n in (100, 300, 1000, 3000)]
    assert z == sorted(z, reverse=True)  # the same score means less between longer proteins
    assert homology_probability(meta["homology"], z[-1]) < 0.5 < homology_probability(
        meta["homology"], z[0])


def test_fit_rejects_single_class_labels() -> None:
    with pytest.raises(ValueError):
        fit_homology_head(np.ones(5), np.ones(5))


def _scop_fasta(tmp_path, folds: list[str], per_fold: int = 4, families: int = 1
                ) -> tuple[str, list[str]]:
    from homalign.stats import random_sequences

    rng = np.random.default_rng(3)
    lines, ids = [], []
    for f in folds:
        for k, s in enumerate(random_sequences(per_fold, rng, 60, 160)):
            ids.append(f"d{f.replace('.', '')}{k}_")
            lines += [f">{ids[-1]} {f}.1.{k % families + 1} (A:) test", s.lower()]
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


def test_chance_fit_groups_are_chains_of_distinct_folds_unlike_their_query(tmp_path) -> None:
    from homalign.model.homology import chance_fit_groups

    folds = ["a.1", "a.2", "a.3", "b.1", "b.2", "b.3", "c.1", "c.2", "a.9"]
    fa, ids = _scop_fasta(tmp_path, folds)
    fold = {i: i[1:3] for i in ids}
    groups = chance_fit_groups(fa, {ids[4]}, 300, targets_per_query=40)  # ids[4]: fold a.2
    assert sum(len(t) for _, t in groups) == 300 and all(len(t) <= 40 for _, t in groups)
    sizes = []
    for q, targets in groups:
        qf = [fold[i] for i in q.id.split("+")]
        for t in [q, *targets]:
            parts = t.id.split("+")
            sizes.append(len(parts))
            tf = [fold[i] for i in parts]
            assert len(set(tf)) == len(tf) and not {"a2", "a9"} & set(tf)
            if t is not q:
                assert not set(tf) & set(qf)
    assert max(sizes) > 1 and 0.3 < np.mean(np.array(sizes) == 1) < 0.8


def test_fit_cli_stores_both_laws_and_a_head(tmp_path, capsys) -> None:
    import json
    import shutil
    from importlib import resources

    from homalign.model.homology import main
    from homalign.stats import EVDParams

    base = resources.files("homalign").joinpath("weights")
    for ext in ("safetensors", "json"):
        shutil.copy(str(base.joinpath(f"learned_search.{ext}")), tmp_path / f"w.{ext}")
    before = json.loads((tmp_path / "w.json").read_text())
    for key in ("null", "chance", "homology"):
        before.pop(key)
    (tmp_path / "w.json").write_text(json.dumps(before))
    fa, ids = _scop_fasta(tmp_path, ["a.1", "a.2", "a.3", "b.1", "b.2", "b.3"], per_fold=6,
                          families=2)
    excl = tmp_path / "dev.txt"
    excl.write_text(ids[-1] + "\n")
    with pytest.raises(SystemExit):  # the head needs the law over all lengths
        main(["--weights", str(tmp_path / "w"), "--pairs", "5", "--fasta", fa,
              "--exclude", str(excl)])
    assert main(["--weights", str(tmp_path / "w"), "--null-pairs", "80", "--chance-pairs", "80",
                 "--no-head", "--fasta", fa, "--exclude", str(excl)]) == 0
    after = json.loads((tmp_path / "w.json").read_text())
    assert {k: v for k, v in after.items() if k not in ("null", "chance")} == before
    null, chance = (EVDParams(**after[k]["params"]) for k in ("null", "chance"))
    assert after["null"]["pairs"] == 80 and null.gamma is not None and null.lam > 0
    assert "80 cross-fold SCOPe train-fold pairs" in null.source
    assert after["chance"]["pairs"] == 80 and chance.model == "gumbel-regression"
    assert main(["--weights", str(tmp_path / "w"), "--pairs", "10", "--fasta", fa,
                 "--exclude", str(excl)]) == 0
    head = json.loads((tmp_path / "w.json").read_text())["homology"]
    assert {"a", "c", "heldout_auc"} <= set(head)
    with pytest.raises(SystemExit):
        main(["--weights", str(tmp_path / "w"), "--no-head"])
    for ext in ("safetensors", "json"):  # weights without a homology adapter: a clear refusal
        shutil.copy(str(base.joinpath(f"learned.{ext}")), tmp_path / f"a.{ext}")
    with pytest.raises(SystemExit):
        main(["--weights", str(tmp_path / "a"), "--null-pairs", "10", "--no-head",
              "--fasta", fa, "--exclude", str(excl)])
    assert "homology adapter" in capsys.readouterr().err
