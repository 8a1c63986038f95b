"""The SCOPe homology protocol equals the published script (foldseek-analysis
``scopbenchmark/scripts/bench.noselfhit.awk``, kept in ``tests/data``) on random fixtures."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from homalign.evaluate.homology import (
    Scop,
    ScopIndex,
    mean_sensitivity,
    query_sensitivity,
    scored_report,
    sensitivities,
    unscored,
)

AWK_SCRIPT = Path(__file__).parent / "data" / "bench.noselfhit.awk"
AWK = shutil.which("mawk") or shutil.which("gawk") or shutil.which("awk")


def _fixture(seed: int) -> tuple[dict[str, str], dict[str, list[str]]]:
    """A random SCOP-like lookup (2 classes x folds x superfamilies x families) and, per query,
    a ranking of unique targets that mixes the query itself, relatives at every level, other
    folds and ids without a label."""
    rng = random.Random(seed)
    lookup: dict[str, str] = {}
    k = 0
    for cls in "ab":
        for fold in range(1, rng.randint(2, 4)):
            for sf in range(1, rng.randint(2, 4)):
                for fam in range(1, rng.randint(2, 4)):
                    for _ in range(rng.randint(1, 4)):
                        lookup[f"d{k:03d}"] = f"{cls}.{fold}.{sf}.{fam}"
                        k += 1
    ids = list(lookup)
    unlabeled = [f"u{i}" for i in range(5)]
    hits: dict[str, list[str]] = {}
    for q in ids:
        if rng.random() < 0.1:
            continue  # a query without hits: scored 0 if eligible
        same_fold = [t for t in ids if lookup[t].split(".")[:2] == lookup[q].split(".")[:2]]
        pool = same_fold * 3 + rng.sample(ids, min(5, len(ids))) + unlabeled[: rng.randint(0, 2)]
        ranking = list(dict.fromkeys(rng.sample(pool, min(len(pool), rng.randint(1, 25)))))
        if rng.random() < 0.7:
            ranking.insert(rng.randint(0, min(3, len(ranking))), q)  # the self hit
            ranking = list(dict.fromkeys(ranking))
        hits[q] = ranking
    return lookup, hits


def _run_awk(tmp_path: Path, lookup: dict[str, str], hits: dict[str, list[str]]
             ) -> dict[str, tuple[float, float, float]]:
    lk = tmp_path / "lookup.tsv"
    lk.write_text("".join(f"{i}\t{s}\n" for i, s in lookup.items()))
    ht = tmp_path / "hits.m8"
    ht.write_text("".join(f"{q}\t{t}\t{100 - r}\n" for q, ts in hits.items()
                          for r, t in enumerate(ts)))
    out = subprocess.run([AWK, "-f", str(AWK_SCRIPT), str(lk), str(ht)], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert out[0].split("\t")[:5] == ["NAME", "SCOP", "FAM", "SFAM", "FOLD"]
    return {f[0]: (float(f[2]), float(f[3]), float(f[4]))
            for f in (line.split("\t") for line in out[1:])}


@pytest.mark.skipif(AWK is None, reason="no awk program (Debian ships mawk)")
@pytest.mark.parametrize("seed", range(8))
def test_sensitivities_equal_the_published_awk(tmp_path, seed):
    lookup, hits = _fixture(seed)
    expected = _run_awk(tmp_path, lookup, hits)
    index = ScopIndex({i: Scop.parse(s) for i, s in lookup.items()})
    # every id of the lookup is a query of the all-vs-all run; ranked by E-value as given
    results = {q: [(t, 100.0 - r, float(r)) for r, t in enumerate(ts)] for q, ts in hits.items()}
    ours = sensitivities(results, list(lookup), index)
    assert set(ours) == set(expected), "the same queries must be scored"
    assert expected, "the fixture must have scorable queries"
    for q, (fam, sfam, fold) in expected.items():
        got = ours[q]
        # mawk prints numbers with 6 significant digits (OFMT %.6g)
        assert got["family"] == pytest.approx(fam, rel=1e-5, abs=1e-6), q
        assert got["superfamily"] == pytest.approx(sfam, rel=1e-5, abs=1e-6), q
        assert got["fold"] == pytest.approx(fold, rel=1e-5, abs=1e-6), q
    # the published +1 denominators: below the exclusive variant wherever a hit was found
    assert all(v["superfamily"] < v["superfamily_exclusive"] for v in ours.values()
               if v["superfamily_exclusive"] > 0)
    assert all(v["fold"] < v["fold_exclusive"] for v in ours.values() if v["fold_exclusive"] > 0)
    means = mean_sensitivity(ours)
    assert set(means) == {"family", "superfamily", "fold", "superfamily_exclusive",
                          "fold_exclusive"}


def test_the_fixture_exercises_every_rule(tmp_path):
    """Unlabeled targets, self hits, queries without hits and the +1 denominators all occur."""
    lookup, hits = _fixture(0)
    assert any(t.startswith("u") for ts in hits.values() for t in ts)
    assert any(q in ts for q, ts in hits.items())
    assert any(q not in hits for q in lookup)


# q: a.1.1.1; family mates f1 f2; superfamily (other family) s1 s2 s3 lonely; fold o1 o2.
LABELS = {
    "q": "a.1.1.1", "f1": "a.1.1.1", "f2": "a.1.1.1",
    "s1": "a.1.1.2", "s2": "a.1.1.2", "s3": "a.1.1.3", "lonely": "a.1.1.4",
    "o1": "a.1.2.1", "o2": "a.1.2.1", "x1": "b.1.1.1",
}


def test_published_and_exclusive_denominators_by_hand():
    index = ScopIndex({k: Scop.parse(v) for k, v in LABELS.items()})
    # famCnt 3, sfamCnt 7, foldCnt 9: published 2, 7 - 2 = 5, 9 - 6 = 3; exclusive 2, 4, 2
    assert index.published_denominators("q") == (2, 5, 3)
    c = index.counts("q")
    assert (c.family, c.superfamily, c.fold) == (2, 4, 2)
    sens = query_sensitivity("q", ["q", "f1", "s1", "s2", "o1", "x1", "f2"], index)
    assert sens == {"family": 1 / 2, "superfamily": 2 / 5, "fold": 1 / 3,
                    "superfamily_exclusive": 2 / 4, "fold_exclusive": 1 / 2}
    # an unlabeled target is a false positive: the walk ends there
    assert query_sensitivity("q", ["f1", "unknown", "f2"], index)["family"] == 1 / 2


def test_the_report_says_how_many_queries_were_scored_and_why_not():
    index = ScopIndex({k: Scop.parse(v) for k, v in LABELS.items()})
    why = unscored(["q", "lonely", "x1", "o1"], index)
    assert why == {"family has no other member": 2,
                   "superfamily has no member outside the family": 1}
    assert scored_report(4, why) == (
        "1 of 4 queries scored (not scored: 2 family has no other member; "
        "1 superfamily has no member outside the family)")
    assert scored_report(3, {}) == "3 of 3 queries scored"


def test_plots_have_title_dataset_n_stable_colours_and_a_legend_off_the_data(tmp_path,
                                                                             monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from homalign.evaluate.homology import plot_cumulative
    from homalign.evaluate.plots import method_color

    seen = []
    real = Figure.savefig

    def spy(self, *args, **kwargs):
        seen.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    rows = [{"method": m, "query": f"q{i}", "family": i / 4, "superfamily": i / 8, "fold": 0.0}
            for m in ("blastp", "my-method") for i in range(4)]
    plot_cumulative(rows, tmp_path / "s.png", dataset="scope40-dev")
    fig = seen[-1]
    assert "scope40-dev" in fig._suptitle.get_text() and "n = 4" in fig._suptitle.get_text()
    lines = {ln.get_label().split()[0]: ln.get_color() for ln in fig.axes[0].get_lines()}
    assert lines == {"blastp": method_color("blastp"), "my-method": method_color("my-method")}
    assert all(ax.get_legend() is None for ax in fig.axes) and fig.legends  # below the panels
    # the same colour whatever else is plotted, and in another process
    import subprocess
    import sys

    other = subprocess.run([sys.executable, "-c", "from homalign.evaluate.plots import "
                            "method_color; print(method_color('my-method'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == method_color("my-method")
