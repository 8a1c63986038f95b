"""E-value parameters of a registered method: published Karlin–Altschul values or a fitted law.

:func:`evd_params` is what the search engine asks for a method and its options; :func:`calibrate`
fits the null law on scores of unrelated pairs (:func:`homalign.stats.unrelated_pairs`) and caches
the fit as JSON under ``$HOMALIGN_CACHE/evd/`` (default ``~/.cache/homalign/evd/``). The statistics
themselves (Gumbel fits, E-values, bit scores) are :mod:`homalign.stats`; this module is the part
that runs methods, so it sits above :mod:`homalign.methods`.

The fit scores random unrelated pairs, which have no MSA or HHM of their own: the options
that name one protein's inputs (:data:`PER_PROTEIN_OPTIONS`: a query's or target's MSA or
HHM file, a directory of per-sequence MSAs, an iterative MSA's database) are left out of it
(:func:`null_options`), so the law is the method's on single-sequence profiles with the same
scoring options (matrix, pseudocounts, gaps, shifts). For ``pssm`` that is PSI-BLAST's own
practice (a PSSM in the matrix's units takes the matrix's statistics); for the HMM-HMM and
profile-profile scores it is the single-sequence null, which a query MSA's profile makes no
more generous (its shift, ``hh_shift="auto"``, only shrinks with the MSA's diversity). A
query's HMMER model (``query_hmm``) stays in: its scores do not depend on the query sequence,
so the fit is that model's own null, as HMMER calibrates each model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence as SequenceABC
from pathlib import Path
from typing import Any

import numpy as np

from homalign.io.atomic import atomic_write
from homalign.methods import get_method
from homalign.paths import cache_root
from homalign.score.pair_scores import score_values
from homalign.stats import (
    EVDParams,
    fit_gumbel,
    fit_regression_tail,
    karlin_altschul,
    unrelated_pairs,
)

EVD_CACHE_VERSION = 4
#: options naming one protein's own inputs, which random calibration pairs do not have
#: (a query's HMMER model stays: its fit scores the model itself against random sequences, as
#: HMMER calibrates a model)
PER_PROTEIN_OPTIONS = ("msa", "db", "inclusion_evalue", "query_msa", "target_msa",
                       "query_hhm", "target_hhm", "query_a3m", "target_a3m")


def null_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without :data:`PER_PROTEIN_OPTIONS`: what the null-law fit scores with."""
    return {k: v for k, v in options.items() if k not in PER_PROTEIN_OPTIONS}


def cache_dir() -> Path:
    """Where fitted parameters are cached: ``$HOMALIGN_CACHE/evd`` or ``~/.cache/homalign/evd``."""
    return cache_root() / "evd"


def _options_key(method: str, options: dict[str, Any], n_pairs: int, seed: int,
                 source: str) -> str:
    blob = json.dumps({"method": method, "options": options, "n_pairs": n_pairs, "seed": seed,
                       "source": source, "version": EVD_CACHE_VERSION},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def pair_scores(method: str, queries: list[Any], targets: list[Any],
                 options: dict[str, Any]) -> tuple[np.ndarray, set[str]]:
    """Scores of pairs with a registered method (score-only DP when it has prepare/score), and
    the DP modes seen ({"local"} for methods without prepare/score)."""
    m = get_method(method)
    opts = {**m.defaults, **options}
    seen: set[str] = set()
    if m.prepare is not None and m.score is not None:
        out = np.empty(len(queries), dtype=np.float64)
        chunk = 256
        for start in range(0, len(queries), chunk):
            pss = [m.score(m.prepare(q, **opts), m.prepare(t, **opts), **opts)
                   for q, t in zip(queries[start:start + chunk], targets[start:start + chunk],
                                   strict=True)]
            seen.update(ps.mode for ps in pss)
            out[start:start + len(pss)] = score_values(pss)
        return out, seen
    scores = [m.align(q, t, **opts).score for q, t in zip(queries, targets, strict=True)]
    return np.array(scores, dtype=np.float64), {"local"}


def calibrate(
    method: str,
    options: dict[str, Any] | None = None,
    *,
    n_pairs: int = 2000,
    sequences: SequenceABC[Any] | None = None,
    labels: SequenceABC[str] | None = None,
    seed: int = 0,
    use_cache: bool = True,
    refit: bool = False,
) -> EVDParams:
    """Fit (λ, K) for ``method`` on scores of ``n_pairs`` unrelated pairs, cached on disk;
    the options that name one protein's own inputs are left out (:func:`null_options`).

    The pairs come from :func:`homalign.stats.unrelated_pairs` (cross-fold when ``labels`` are
    given, shuffled
    ``sequences``, else i.i.d. background sequences). The cache key covers the method name, its
    options, the pair source, ``n_pairs`` and ``seed``; ``refit=True`` ignores a cached fit.
    """
    options = {**get_method(method).defaults, **null_options(options or {})}
    source = ("cross-fold" if labels is not None else "shuffled") if sequences is not None \
        else "iid-background"
    if sequences is not None:
        digest = hashlib.sha256("".join(s.residues for s in sequences).encode()).hexdigest()[:12]
        source = f"{source}:{digest}"
    fingerprint = get_method(method).fingerprint
    if fingerprint is not None:
        source = f"{source}:{fingerprint()}"
    law = get_method(method).null_law
    if law != "gumbel":
        source = f"{source}:{law}"
    key = _options_key(method, options, n_pairs, seed, source)
    path = cache_dir() / f"{method}-{key}.json"
    if use_cache and not refit and path.exists():
        try:
            data = json.loads(path.read_text())
            return EVDParams(**data["params"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged cache entry is refitted and overwritten
    qs, ts, kind = unrelated_pairs(n_pairs, sequences=sequences, labels=labels, seed=seed)
    scores, modes = pair_scores(method, qs, ts, options)
    qlen = np.array([len(q) for q in qs])
    tlen = np.array([len(t) for t in ts])
    what = f"{n_pairs} {kind} pairs, method {method}"
    if modes == {"local"} and law == "gumbel":
        params = fit_gumbel(scores, qlen, tlen, source=f"ML Gumbel fit, {what}")
    else:
        params = fit_regression_tail(
            scores, qlen, tlen,
            source=f"regression location/scale, exponential tail, {what} ({sorted(modes)})")
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as fh:
            json.dump({"method": method, "options": options, "n_pairs": n_pairs, "seed": seed,
                       "source": source, "params": params.to_json()},
                      fh, indent=1, sort_keys=True, default=str)
    return params


def evd_params(method: str, options: dict[str, Any] | None = None,
               **calibrate_kwargs: Any) -> EVDParams:
    """The parameters :func:`homalign.search.search` uses for a method and its options.

    Substitution-matrix methods in local mode (``sw``) with a published gap-cost combination get
    Karlin–Altschul values; a method that ships its own null law (``Method.null_params``, the
    learned method's fit on real unrelated proteins) gets that, unless ``calibrate_kwargs`` ask
    for a fit; everything else gets a cached :func:`calibrate` fit.
    """
    m = get_method(method)
    opts = {**m.defaults, **(options or {})}
    if m.null_params is not None and not calibrate_kwargs:
        shipped = m.null_params()
        if shipped is not None:
            return shipped
    if method == "sw":
        ka = karlin_altschul(str(opts.get("matrix", "BLOSUM62")), float(opts.get("gap_open", 11)),
                             float(opts.get("gap_extend", 1)))
        if ka is not None:
            return ka
    return calibrate(method, options or {}, **calibrate_kwargs)


__all__ = ["EVD_CACHE_VERSION", "cache_dir", "calibrate", "evd_params", "pair_scores"]
