"""Dev-set alignment quality and speed of the learned aligner against the classical baselines.

Usage::

    OMP_WAIT_POLICY=PASSIVE python benchmarks/learned.py [--weights STEM] [--data DIR]
        [--methods nw,sw,crf0,learned,learned-viterbi] [--out benchmarks/results/learned.md]

Methods (all on the HOMSTRAD dev reference pairs, every member pair of every family):

* ``nw`` / ``sw``: BLOSUM62, BLAST 11/1 affine gaps, exact global / local DP.
* ``crf0``: the *untrained* model (BLOSUM62 11/1 in nats): exact posteriors + MEA decoding.
* ``learned``: the trained model (``--weights`` stem, default the bundled weights): exact
  posteriors of its scores + MEA decoding (what ``homalign.align(method="learned")`` does).
* ``learned-viterbi``: the best path of the trained model's scores (no posterior decoding).
* ``learned-template``: template mode (``--template-weights`` stem, default the bundled
  ``learned_template``): the target's secondary structure and accessibility from the family's
  ``.tem`` file are model input, as HHpred reads a template's DSSP. Not sequence-only: reported
  separately.
* ``learned-homologs`` (only with ``--homologs DB``): ``learned`` with consistency through both
  sequences' homologues in the sequence database DB (``homalign.align(method="learned",
  homologs=DB)``: :mod:`homalign.model.consistency`). Sequences are still the only input about the
  two proteins, but the database is extra input: reported separately.

Scores from :mod:`homalign.evaluate.metrics` (mean over pairs; twilight = reference identity
< 30%). Speed: ``learned`` end to end (encode both, score, posteriors, MEA) on random pairs of
length 300 on one thread, after a warm-up pair.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from homalign.paths import shared_data_root  # noqa: E402

DEV = shared_data_root() / "homstrad" / "dev"
ALL = ("nw", "sw", "crf0", "learned", "learned-viterbi", "learned-template")


def _aligner(name: str, model, homologs=None):
    from homalign.dp import GapCosts, align
    from homalign.matrices import score_matrix
    from homalign.model.decode import mea_align, posterior_matrix

    if name in ("nw", "sw"):
        mode = "global" if name == "nw" else "local"

        def run(q, t):
            return align(score_matrix(q, t, "BLOSUM62"), GapCosts.uniform(len(q), len(t), 11, 1),
                         mode=mode).pairs
        return run
    if name == "learned-viterbi":
        def run(q, t):
            S, gaps = model.score_pair(q, t)
            return align(S, gaps, mode=model.cfg.decode_mode).pairs
        return run

    if name == "learned-homologs":
        from homalign.methods.learned import consistent_posterior
        from homalign.model.consistency import CONSISTENCY_THRESHOLD
        from homalign.sequence import Sequence

        def run(q, t):
            P, _ = consistent_posterior(model, Sequence("x", q), Sequence("y", t), homologs)
            return mea_align(P, CONSISTENCY_THRESHOLD).pairs
        return run

    def run(q, t, tokens=None):
        S, gaps = model.score_pair(q, t, tokens)
        P = posterior_matrix(S, gaps, mode=model.cfg.decode_mode)
        return mea_align(P, model.cfg.mea_threshold).pairs
    return run


def _target_tokens(data: Path):
    """ReferencePair -> the target's template tokens, from its family's ``.tem`` file."""
    from homalign.model.template import parse_template, read_template_annotations

    notes: dict[str, dict] = {}

    def tokens(r):
        if r.family not in notes:
            notes[r.family] = read_template_annotations(str(data / r.family / f"{r.family}.tem"))
        ss, acc = notes[r.family][r.target.id]
        return parse_template(len(r.target), ss, acc, record=r.target.id)
    return tokens


def evaluate(methods: list[str], weights: str | None, data: Path, limit: int | None,
             template_weights: str | None = None, homologs=None) -> dict:
    from homalign.evaluate.metrics import score_pair, summarise
    from homalign.evaluate.reference import load_reference_pairs
    from homalign.model import AlignerModel, load_bundled, load_model

    refs = load_reference_pairs(data)
    if limit:
        refs = refs[:limit]
    trained = (load_model(weights)[0] if weights else load_bundled()[0]) if any(
        m.startswith("learned") for m in methods) else None
    out = {}
    for name in methods:
        model = AlignerModel().eval() if name == "crf0" else trained
        t0 = time.time()
        if name == "learned-template":
            model = (load_model(template_weights)[0] if template_weights
                     else load_bundled("learned_template")[0])
            run, tok = _aligner(name, model), _target_tokens(data)
            aligned = [run(r.query.codes, r.target.codes, tok(r)) for r in refs]
        else:
            run = _aligner(name, model, homologs)
            if name == "learned-homologs":
                aligned = [run(r.query.residues, r.target.residues) for r in refs]
            else:
                aligned = [run(r.query.codes, r.target.codes) for r in refs]
        rows = [score_pair(a, r.pairs, len(r.query), len(r.target), ref_identity=r.identity)
                for a, r in zip(aligned, refs, strict=True)]
        out[name] = {**summarise(rows), "seconds": time.time() - t0}
        print(name, {k: round(v, 4) if isinstance(v, float) else v
                     for k, v in out[name].items()}, flush=True)
    return out


def speed(weights: str | None, n_pairs: int = 20, length: int = 300) -> tuple[float, float]:
    """Pairs per second of the full learned pipeline at L = 300 on one thread: (by wall time, by
    process CPU time; the second is what one dedicated core would give on a shared machine)."""
    import homalign
    from homalign.alphabet import ALPHABET
    from homalign.sequence import Sequence

    if weights:
        from homalign.model import weights as W

        W.load_bundled.cache_clear()
        model, meta = W.load_model(weights)
        W.load_bundled = lambda: (model, meta)  # benchmark the given weights through the API
    rng = np.random.default_rng(0)
    seqs = [Sequence(f"s{k}", "".join(rng.choice(list(ALPHABET[:20]), length)))
            for k in range(2 * n_pairs + 2)]
    homalign.align(seqs[0], seqs[1], method="learned")  # warm-up (compilation, weights)
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(n_pairs):
        homalign.align(seqs[2 + 2 * k], seqs[3 + 2 * k], method="learned")
    return n_pairs / (time.perf_counter() - t0), n_pairs / (time.process_time() - c0)


def write_markdown(path: Path, res: dict, pps: tuple[float, float] | None, command: str,
                   weights: str) -> None:
    from homalign.io.atomic import atomic_write

    lines = [
        "# Learned aligner on HOMSTRAD dev",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); "
        f"weights: {weights}.",
        "",
        "| method | pairs | F1 | S_dev | S_mod | balanced | twilight pairs | twilight F1 "
        "| twilight balanced | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res.items():
        lines.append(
            f"| {name} | {r['pairs']} | {r['F1']:.3f} | {r['S_dev']:.3f} | {r['S_mod']:.3f} | "
            f"{r['balanced']:.3f} | {r['twilight_pairs']} | {r['twilight_F1']:.3f} | "
            f"{r['twilight_balanced']:.3f} | {r['seconds']:.0f} |")
    lines += ["", "nw/sw: BLOSUM62 11/1 exact DP; crf0: untrained CRF (BLOSUM62 11/1 in nats) + "
              "posterior MEA decoding; learned: trained model + MEA; learned-viterbi: best path of "
              "the trained scores; learned-template: template mode (the target's `.tem` secondary "
              "structure and accessibility are input; not sequence-only); learned-homologs: learned "
              "with consistency through database homologues (the database is extra input). "
              "Twilight: reference identity < 30%."]
    if pps is not None:
        lines += ["", f"Speed of `homalign.align(..., method=\"learned\")` at L = 300, one thread, "
                  f"after warm-up: {pps[0]:.1f} pairs/s by wall time on the shared machine, "
                  f"{pps[1]:.1f} pairs/s by process CPU time."]
    with atomic_write(path) as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", default=None, help="model stem (default: the bundled weights)")
    ap.add_argument("--template-weights", default=None,
                    help="template-mode model stem (default: the bundled learned_template)")
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--methods", default=",".join(ALL))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--homologs", default=None, metavar="DB",
                    help="sequence database (FASTA or makedb dir) for learned-homologs, which is "
                         "then added to --methods")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    methods = [m for m in args.methods.split(",") if m]
    homologs = None
    if args.homologs:
        from homalign.search import open_database

        homologs = open_database(args.homologs)
        if "learned-homologs" not in methods:
            methods.append("learned-homologs")
    elif "learned-homologs" in methods:
        ap.error("learned-homologs needs --homologs DB")
    unknown = set(methods) - set(ALL) - {"learned-homologs"}
    if unknown:
        ap.error(f"unknown methods {sorted(unknown)}")
    res = evaluate(methods, args.weights, args.data, args.limit, args.template_weights, homologs)
    pps = None if args.no_speed else speed(args.weights)
    if pps is not None:
        print(f"speed: {pps[0]:.1f} pairs/s (wall), {pps[1]:.1f} pairs/s (CPU time) at L=300")
    if args.out:
        command = "python benchmarks/learned.py " + " ".join(argv if argv is not None
                                                              else sys.argv[1:])
        write_markdown(args.out, res, pps, command, args.weights or "bundled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
