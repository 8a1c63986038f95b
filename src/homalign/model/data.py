"""Training pairs for the learned aligner: HOMSTRAD families and TM-align pairs, cropped and batched.

A :class:`TrainPair` is two encoded sequences with their structure-based reference alignment
(aligned residue pairs) and, for HOMSTRAD, per-residue secondary structure and accessibility labels
from the family's JOY ``.tem`` file (``-1`` where unknown). ``group`` names what a validation split
must keep together (the HOMSTRAD family, the SCOP fold of a TM-align pair).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path

import numpy as np
import torch

from homalign.alphabet import encode
from homalign.model.encoder import PAD
from homalign.model.template import ACC_TRACK, SS_TRACK

_SS_CLASS = {"H": 0, "G": 0, "I": 0, "E": 1, "B": 1}  # anything else (C, P, coil marks) -> 2
_ACC_CLASS = {"T": 0, "F": 1}


@dataclass(frozen=True)
class TrainPair:
    """Two sequences (uint8 codes) and their reference alignment (int32 (k, 2) pairs)."""

    name: str
    group: str
    source: str  # "homstrad" | "tmalign"
    q: np.ndarray
    t: np.ndarray
    pairs: np.ndarray
    q_ss: np.ndarray
    t_ss: np.ndarray
    q_acc: np.ndarray
    t_acc: np.ndarray

    @property
    def identity(self) -> float:
        if len(self.pairs) == 0:
            return 0.0
        return float((self.q[self.pairs[:, 0]] == self.t[self.pairs[:, 1]]).mean())


def pairs_from_rows(row_a: str, row_b: str) -> np.ndarray:
    """Residue pairs (i, j) sharing a column of two equal-length gapped rows."""
    a = np.frombuffer(row_a.encode("ascii", "replace"), dtype=np.uint8)
    b = np.frombuffer(row_b.encode("ascii", "replace"), dtype=np.uint8)
    gap = np.frombuffer(b"-.", dtype=np.uint8)
    ma, mb = ~np.isin(a, gap), ~np.isin(b, gap)
    ia, ib = np.cumsum(ma) - 1, np.cumsum(mb) - 1
    both = ma & mb
    return np.stack([ia[both], ib[both]], axis=1).astype(np.int32).reshape(-1, 2)


def _labels(row: str, track: str | None, table: dict[str, int], default: int) -> np.ndarray:
    """Per-residue labels of an aligned row from a same-width JOY track (-1 if no track)."""
    n = sum(c.isalpha() for c in row)
    if track is None:
        return np.full(n, -1, dtype=np.int64)
    out = [table.get(t.upper(), default) for c, t in zip(row, track, strict=True) if c.isalpha()]
    return np.asarray(out, dtype=np.int64)


def load_homstrad_family(family_dir: Path, max_pairs: int | None = None,
                         rng: np.random.Generator | None = None) -> list[TrainPair]:
    """All member pairs of one HOMSTRAD family (optionally a random subset of ``max_pairs``)."""
    from homalign.io import read_pir, read_tem

    name = family_dir.name
    ali = family_dir / f"{name}.ali"
    entries = read_pir(ali)
    tem_path = family_dir / f"{name}.tem"
    tem = read_tem(tem_path) if tem_path.exists() else {}
    members = []
    for e in entries:
        row = e.aligned
        tracks = tem.get(e.id, {})
        ok = len(tracks.get("sequence", "")) == len(row)
        ss = _labels(row, tracks.get(SS_TRACK) if ok else None, _SS_CLASS, 2)
        acc = _labels(row, tracks.get(ACC_TRACK) if ok else None, _ACC_CLASS, -1)
        codes = encode(e.sequence, path=ali, record=e.id)
        members.append((e.id, row, codes, ss, acc))
    combos = list(combinations(range(len(members)), 2))
    if max_pairs is not None and len(combos) > max_pairs:
        rng = rng or np.random.default_rng(zlib.crc32(name.encode()))
        keep = rng.choice(len(combos), size=max_pairs, replace=False)
        combos = [combos[k] for k in sorted(keep)]
    out = []
    for a, b in combos:
        ia, ra, ca, sa, aa = members[a]
        ib, rb, cb, sb, ab = members[b]
        pairs = pairs_from_rows(ra, rb)
        if len(pairs) < 2:
            continue
        out.append(TrainPair(f"{name}:{ia}-{ib}", name, "homstrad", ca, cb, pairs, sa, sb, aa, ab))
    return out


def load_homstrad(data_dir: str | Path, max_pairs_per_family: int | None = None
                  ) -> list[TrainPair]:
    """Pairs of every family under ``data_dir`` (``<FAMILY>/<FAMILY>.ali`` + ``.tem``)."""
    out: list[TrainPair] = []
    for fam in sorted(p for p in Path(data_dir).iterdir() if p.is_dir()):
        if (fam / f"{fam.name}.ali").exists():
            out.extend(load_homstrad_family(fam, max_pairs_per_family))
    return out


def load_tmalign(tsv: str | Path) -> list[TrainPair]:
    """TM-align reference pairs (no structural labels); group = the query's SCOP fold."""
    from homalign.io import read_tmalign_pairs

    out = []
    for p in read_tmalign_pairs(tsv):
        q = encode(p.query_seq, path=tsv, record=p.query)
        t = encode(p.target_seq, path=tsv, record=p.target)
        if len(p.pairs) < 2:
            continue
        fold = ".".join(p.query_sccs.split(".")[:2])
        none_q = np.full(len(q), -1, dtype=np.int64)
        none_t = np.full(len(t), -1, dtype=np.int64)
        out.append(TrainPair(f"{p.query}-{p.target}", f"fold:{fold}", "tmalign", q, t,
                             np.asarray(p.pairs, dtype=np.int32), none_q, none_t, none_q, none_t))
    return out


def _increasing_subset(pairs: np.ndarray) -> np.ndarray:
    """The longest subset of ``pairs`` (sorted by the first column, which is unique) whose
    second column strictly increases too: a valid alignment path."""
    from bisect import bisect_left

    tails: list[int] = []  # tails[k] = smallest end value of an increasing run of length k + 1
    tail_at: list[int] = []
    prev = np.full(len(pairs), -1, dtype=np.int64)
    for n, j in enumerate(pairs[:, 1].tolist()):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        prev[n] = tail_at[k - 1] if k > 0 else -1
    keep = []
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        keep.append(n)
        n = int(prev[n])
    return pairs[np.asarray(keep[::-1], dtype=np.int64)] if keep else pairs[:0]


def compose_pairs(pairs: list[TrainPair], min_coverage: float = 0.5, max_pairs: int | None = None,
                  seed: int = 0, support: float = 0.0, min_middles: int = 1) -> list[TrainPair]:
    """Transitive training pairs: A-C aligned through the domains B of pairs A-B, B-C.

    Each input pair's name must be ``"<A>-<B>"`` (as :func:`load_tmalign` writes it). A middle
    domain B votes for residue pair (i, k) when A's i and C's k are both aligned to the same
    residue of B. With one middle this is plain composition of two monotone alignments (a valid
    path, a subset of what aligning A and C directly would give); with several, residue i of A
    keeps the residue of C most middles vote for if at least ``max(1, ceil(support x n))`` of the
    ``n`` middles do, and the longest strictly increasing subset of those pairs is the alignment.
    On the TM-align train pairs, against the direct TM-align alignment of pairs that have one,
    one middle gives precision 0.83 / recall 0.79, three or more with ``support`` 0.5 about
    0.89 / 0.89 (docs/learned.md).

    A composed pair is kept when A and C are not already a pair of ``pairs``, A's and C's pairs
    with the middles share their group, at least ``min_middles`` middles link them, and it pairs
    at least ``min_coverage`` x the shorter sequence; at most ``max_pairs`` of them, drawn with
    ``seed``. Source ``"transitive"``; the group is the input pairs' (the SCOP fold), so a
    validation split by group stays disjoint when ``pairs`` is the training side of that split.
    """
    seqs: dict[str, np.ndarray] = {}
    edges: dict[str, list[tuple[str, np.ndarray, str]]] = {}
    direct: set[frozenset[str]] = set()
    for p in pairs:
        a, sep, b = p.name.partition("-")
        if not sep or not a or not b:
            raise ValueError(f"pair name {p.name!r} is not '<A>-<B>'")
        seqs[a], seqs[b] = p.q, p.t
        direct.add(frozenset((a, b)))
        # map: B residue -> A residue (-1 if unaligned), and the reverse
        to_a = np.full(len(p.t), -1, dtype=np.int64)
        to_a[p.pairs[:, 1]] = p.pairs[:, 0]
        to_b = np.full(len(p.q), -1, dtype=np.int64)
        to_b[p.pairs[:, 0]] = p.pairs[:, 1]
        edges.setdefault(b, []).append((a, to_a, p.group))
        edges.setdefault(a, []).append((b, to_b, p.group))
    # votes[(A, C)] = one (i, k) pair array per middle, A < C by name
    votes: dict[tuple[str, str], list[np.ndarray]] = {}
    group: dict[tuple[str, str], str] = {}
    for mid in sorted(edges):
        nbrs = sorted(edges[mid], key=lambda e: e[0])
        for x in range(len(nbrs)):
            for y in range(x + 1, len(nbrs)):
                (a, map_a, ga), (c, map_c, gc) = nbrs[x], nbrs[y]
                if a == c or ga != gc or frozenset((a, c)) in direct:
                    continue
                both = (map_a >= 0) & (map_c >= 0)
                votes.setdefault((a, c), []).append(
                    np.stack([map_a[both], map_c[both]], axis=1).astype(np.int64))
                group[(a, c)] = ga
    out = []
    for (a, c) in sorted(votes):
        ballots = votes[(a, c)]
        n_mid = len(ballots)
        if n_mid < min_middles:
            continue
        qa, qc = seqs[a], seqs[c]
        allv = np.concatenate(ballots)
        if len(allv) == 0:
            continue
        codes, counts = np.unique(allv[:, 0] * len(qc) + allv[:, 1], return_counts=True)
        need = max(1, int(np.ceil(support * n_mid - 1e-9)))
        i, k = codes // len(qc), codes % len(qc)
        # per residue of A, the most-voted residue of C (ties: the first)
        order = np.lexsort((-counts, i))
        first = np.ones(len(order), dtype=bool)
        first[1:] = i[order][1:] != i[order][:-1]
        best = order[first]
        best = best[counts[best] >= need]
        aligned = _increasing_subset(np.stack([i[best], k[best]], axis=1))
        if len(aligned) < 2 or len(aligned) < min_coverage * min(len(qa), len(qc)):
            continue
        none_a = np.full(len(qa), -1, dtype=np.int64)
        none_c = np.full(len(qc), -1, dtype=np.int64)
        out.append(TrainPair(f"{a}-{c}", group[(a, c)], "transitive", qa, qc,
                             aligned.astype(np.int32), none_a, none_c, none_a, none_c))
    if max_pairs is not None and len(out) > max_pairs:
        keep = np.random.default_rng(seed).choice(len(out), size=max_pairs, replace=False)
        out = [out[k] for k in sorted(keep)]
    return out


def split_by_group(pairs: list[TrainPair], val_fraction: float = 0.08
                   ) -> tuple[list[TrainPair], list[TrainPair]]:
    """Deterministic train/validation split that keeps each group (family, fold) on one side."""
    cut = int(val_fraction * 10_000)
    train, val = [], []
    for p in pairs:
        (val if zlib.crc32(p.group.encode()) % 10_000 < cut else train).append(p)
    return train, val


def crop(pair: TrainPair, window: int, rng: np.random.Generator) -> TrainPair:
    """A window of at most ``window`` residues of each sequence, starting and ending on a pair.

    Pairs that already fit are returned whole (with their unaligned ends).
    """
    if len(pair.q) <= window and len(pair.t) <= window:
        return pair
    p = pair.pairs
    start = int(rng.integers(len(p)))
    # the last pair index e with both spans <= window
    fits = (p[start:, 0] - p[start, 0] < window) & (p[start:, 1] - p[start, 1] < window)
    end = start + int(np.flatnonzero(fits)[-1])
    qs, qe = int(p[start, 0]), int(p[end, 0]) + 1
    ts, te = int(p[start, 1]), int(p[end, 1]) + 1
    sub = p[start:end + 1] - np.array([qs, ts], dtype=np.int32)
    return replace(pair, q=pair.q[qs:qe], t=pair.t[ts:te], pairs=sub,
                   q_ss=pair.q_ss[qs:qe], t_ss=pair.t_ss[ts:te],
                   q_acc=pair.q_acc[qs:qe], t_acc=pair.t_acc[ts:te])


@dataclass
class Batch:
    """Padded tensors of a list of (cropped) pairs."""

    q: torch.Tensor
    t: torch.Tensor
    lq: torch.Tensor
    lt: torch.Tensor
    pairs: list[np.ndarray]
    q_ss: torch.Tensor
    t_ss: torch.Tensor
    q_acc: torch.Tensor
    t_acc: torch.Tensor
    names: list[str]


def _pad(arrays: list[np.ndarray], value: int) -> torch.Tensor:
    n = max(len(a) for a in arrays)
    out = np.full((len(arrays), n), value, dtype=np.int64)
    for k, a in enumerate(arrays):
        out[k, : len(a)] = a
    return torch.as_tensor(out)


def collate(pairs: list[TrainPair]) -> Batch:
    return Batch(
        q=_pad([p.q for p in pairs], PAD), t=_pad([p.t for p in pairs], PAD),
        lq=torch.tensor([len(p.q) for p in pairs]), lt=torch.tensor([len(p.t) for p in pairs]),
        pairs=[p.pairs for p in pairs],
        q_ss=_pad([p.q_ss for p in pairs], -1), t_ss=_pad([p.t_ss for p in pairs], -1),
        q_acc=_pad([p.q_acc for p in pairs], -1), t_acc=_pad([p.t_acc for p in pairs], -1),
        names=[p.name for p in pairs],
    )


def mutate(codes: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """``codes`` with each standard residue, with probability ``rate``, redrawn from BLOSUM62's
    conditional substitution probabilities P(a | b) (so it may stay itself): simulated extra
    divergence that keeps the structure-based alignment valid."""
    from homalign.profile.pseudocounts import conditional_matrix

    if rate <= 0.0:
        return codes
    P = conditional_matrix("BLOSUM62")
    cdf = np.cumsum(P, axis=1)
    cdf[:, -1] = 1.0
    out = codes.copy()
    hit = (rng.random(len(codes)) < rate) & (codes < P.shape[0])
    idx = np.flatnonzero(hit)
    if len(idx):
        u = rng.random(len(idx))
        rows = cdf[codes[idx].astype(np.int64)]
        out[idx] = (u[:, None] > rows).sum(axis=1).astype(codes.dtype)
    return out


def cell_buckets(order: list[int], size: list[int], max_cells: int) -> list[list[int]]:
    """``order`` (indices sorted by ``size``) cut into runs of at most ``max_cells`` DP cells,
    ``len(run) * size^2`` with the run's last (largest) size; a pair alone may exceed it."""
    groups: list[list[int]] = []
    cur: list[int] = []
    for k in order:
        if cur and (len(cur) + 1) * size[k] * size[k] > max_cells:
            groups.append(cur)
            cur = []
        cur.append(k)
    if cur:
        groups.append(cur)
    return groups


def epoch_groups(pairs: list[TrainPair], window: int, max_cells: int, rng: np.random.Generator,
                 shuffle: bool = True, mutation_rate: float = 0.0
                 ) -> tuple[list[TrainPair], list[list[int]]]:
    """One epoch's batches: every pair cropped (in order, by ``rng``), sorted by its longer
    sequence (ties broken by ``rng``), cut into groups of at most ``max_cells`` DP cells
    (``len(group) * L^2``), and the groups shuffled by ``rng``. Returns (cropped pairs, groups of
    their indices, in batch order).

    ``mutation_rate`` > 0 redraws residues of both sequences (:func:`mutate`; augmentation)."""
    cropped = [crop(p, window, rng) for p in pairs]
    if mutation_rate > 0.0:
        cropped = [replace(p, q=mutate(p.q, mutation_rate, rng), t=mutate(p.t, mutation_rate, rng))
                   for p in cropped]
    size = [max(len(p.q), len(p.t)) for p in cropped]
    order = sorted(range(len(cropped)), key=lambda k: (size[k], rng.random() if shuffle else 0.0))
    groups = cell_buckets(order, size, max_cells)
    if shuffle:
        rng.shuffle(groups)
    return cropped, groups


def batches(pairs: list[TrainPair], window: int, max_cells: int, rng: np.random.Generator,
            shuffle: bool = True, mutation_rate: float = 0.0) -> Iterator[Batch]:
    """The collated batches of :func:`epoch_groups`, in order."""
    cropped, groups = epoch_groups(pairs, window, max_cells, rng, shuffle, mutation_rate)
    for g in groups:
        yield collate([cropped[k] for k in g])
