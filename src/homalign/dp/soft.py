"""Smoothed, differentiable affine-gap DP in torch (a soft Gotoh), batched over pairs.

The max of the exact DP is replaced by ``smax_T(x) = T * logsumexp(x / T)``; at ``T = 1`` with
scores in nats the result is the log partition function ``log Z`` of a CRF over alignment paths,
and its gradient with respect to ``S[i, j]`` is the posterior probability that ``i`` and ``j`` are
aligned (the expected alignment, Mensch & Blondel 2018; DEDAL, Llinares-Lopez et al. 2023). As
``T -> 0`` it converges to the exact DP score; ``T = 0`` takes the hard max, whose gradient is the
optimal path.

The path model is exactly the one of :mod:`homalign.dp` (``docs/architecture.md``): columns
M (pair), I (query residue vs gap), D (target residue vs gap) on the (Lq + 1) x (Lt + 1) prefix
grid, with the eight position-specific gap vectors of ``GapCosts``; every transition between
M, I and D is allowed (a gap column opens a run unless the previous column is of the same kind);
the modes differ only in their start and end cells:

* ``global``: from (0, 0) to (Lq, Lt), any column kinds.
* ``local``: begins and ends with an M column anywhere; plus the empty alignment (score 0).
* ``glocal``: from a cell of row 0 to a cell of row Lq.
* ``semiglobal``: from row 0 or column 0 to row Lq or column Lt (the corner cells (0, Lt) and
  (Lq, 0) are start and end cells: the empty alignment, counted once per corner).

The recursion runs over anti-diagonals ``d = i + j``; each step is a handful of vectorised ops on
``(B, Lq + 1)`` tensors, so the Python loop has ``Lq + Lt + 1`` iterations whatever the batch size.
This module imports only torch and numpy (it is not imported by ``homalign.dp``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import Tensor

__all__ = ["NEG", "SoftGaps", "soft_align", "soft_posteriors", "path_score", "SOFT_MODES"]

NEG = -1.0e9
"""Stands for minus infinity (a finite value keeps logsumexp gradients free of NaN)."""

SOFT_MODES = ("local", "global", "glocal", "semiglobal")


@dataclass
class SoftGaps:
    """Batched torch version of ``homalign.dp.GapCosts``: eight (B, n) tensors, costs >= 0.

    Lengths (padded to the batch maximum): ``q_ins_*`` Lq, ``t_ins_*`` Lt + 1, ``t_del_*`` Lt,
    ``q_del_*`` Lq + 1. An I run of query residues ``i0..i1`` after ``j`` consumed target residues
    costs ``q_ins_open[i0] + t_ins_open[j] + sum_i (q_ins_ext[i] + t_ins_ext[j])``; a D run
    symmetrically (see ``homalign.dp.gaps``).
    """

    q_ins_open: Tensor
    q_ins_ext: Tensor
    t_ins_open: Tensor
    t_ins_ext: Tensor
    t_del_open: Tensor
    t_del_ext: Tensor
    q_del_open: Tensor
    q_del_ext: Tensor

    @classmethod
    def from_vectors(cls, batch: int, lq: int, lt: int, *, dtype: torch.dtype = torch.float32,
                     **vectors: Tensor) -> SoftGaps:
        """Build from any subset of the eight (B, n) tensors; the others are zero."""
        sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
        names = [f.name for f in fields(cls)]
        unknown = set(vectors) - set(names)
        if unknown:
            raise ValueError(f"unknown gap vectors: {sorted(unknown)}")
        out = {}
        for n in names:
            v = vectors.get(n)
            out[n] = torch.zeros(batch, sizes[n[:5]], dtype=dtype) if v is None else v
        return cls(**out)

    @classmethod
    def uniform(cls, batch: int, lq: int, lt: int, open: float, extend: float,
                dtype: torch.dtype = torch.float32) -> SoftGaps:
        """BLAST-style constant costs: a gap of length k costs ``open + k * extend``."""
        return cls.from_vectors(
            batch, lq, lt, dtype=dtype,
            q_ins_open=torch.full((batch, lq), open, dtype=dtype),
            q_ins_ext=torch.full((batch, lq), extend, dtype=dtype),
            t_del_open=torch.full((batch, lt), open, dtype=dtype),
            t_del_ext=torch.full((batch, lt), extend, dtype=dtype),
        )

    @classmethod
    def from_numpy(cls, gap_costs: object, dtype: torch.dtype = torch.float64) -> SoftGaps:
        """Batch of one from any object with the eight numpy vectors (e.g. ``GapCosts``)."""
        return cls(**{
            f.name: torch.tensor(np.array(getattr(gap_costs, f.name)), dtype=dtype)[None]
            for f in fields(cls)
        })

    def to_numpy(self, index: int, lq: int, lt: int) -> dict[str, np.ndarray]:
        """The eight float32 vectors of batch element ``index`` cut to its lengths (lq, lt)."""
        sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
        return {
            f.name: getattr(self, f.name)[index, : sizes[f.name[:5]]].detach().cpu().numpy()
            .astype(np.float32)
            for f in fields(self)
        }


def _smax(stack: list[Tensor], temperature: float) -> Tensor:
    x = torch.stack(stack, dim=0)
    if temperature == 0.0:
        return x.amax(dim=0)
    return temperature * torch.logsumexp(x / temperature, dim=0)


def _smax1(x: Tensor, temperature: float) -> Tensor:
    """Soft max over dim 1."""
    if temperature == 0.0:
        return x.amax(dim=1)
    if temperature == 1.0:
        return torch.logsumexp(x, dim=1)
    return temperature * torch.logsumexp(x / temperature, dim=1)


def _skew(grid: Tensor, n_diag: int) -> Tensor:
    """(B, n, m) grid -> (B, n_diag, n) with out[b, d, i] = grid[b, i, d - i] (clamped)."""
    b, n, m = grid.shape
    d = torch.arange(n_diag).view(-1, 1)
    i = torch.arange(n).view(1, -1)
    j = (d - i).clamp(0, m - 1)
    flat = (i * m + j).reshape(-1)
    return grid.reshape(b, n * m)[:, flat].reshape(b, n_diag, n)


def _begin_end_masks(mode: str, n: int, m: int, lq: Tensor, lt: Tensor
                     ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Boolean (B, n, m) grids: start cells for M, start cells for gaps, end cells (M / gaps)."""
    i = torch.arange(n).view(1, -1, 1)
    j = torch.arange(m).view(1, 1, -1)
    lqb = lq.view(-1, 1, 1)
    ltb = lt.view(-1, 1, 1)
    inside = (i <= lqb) & (j <= ltb)
    if mode == "global":
        start = (i == 0) & (j == 0)
        end = (i == lqb) & (j == ltb)
        return start, start, end, end
    if mode == "local":
        start = inside & (i < lqb) & (j < ltb)
        return start, torch.zeros_like(start), inside, torch.zeros_like(start)
    if mode == "glocal":
        start = (i == 0) & (j <= ltb)
        end = (i == lqb) & (j <= ltb)
        return start, start, end, end
    if mode == "semiglobal":
        start = inside & ((i == 0) | (j == 0))
        end = inside & ((i == lqb) | (j == ltb))
        return start, start, end, end
    raise ValueError(f"unknown alignment mode {mode!r}; expected one of {SOFT_MODES}")


def _as_lengths(lengths: Tensor | None, default: int, batch: int) -> Tensor:
    if lengths is None:
        return torch.full((batch,), default, dtype=torch.long)
    return torch.as_tensor(lengths, dtype=torch.long).reshape(batch)


def soft_align(
    S: Tensor,
    gaps: SoftGaps,
    mode: str = "global",
    temperature: float = 1.0,
    lq: Tensor | None = None,
    lt: Tensor | None = None,
) -> Tensor:
    """Smoothed alignment score of each pair in a batch.

    Args:
        S: (B, Lq, Lt) substitution scores (padded; entries beyond a pair's lengths are ignored).
        gaps: the batch's gap costs (:class:`SoftGaps`, padded the same way).
        mode: ``local``, ``global``, ``glocal`` or ``semiglobal``.
        temperature: ``T`` of the soft max; 1 gives ``log Z``, 0 the exact (hard) maximum.
        lq, lt: (B,) true lengths; default the padded sizes.

    Returns:
        (B,) tensor; differentiable with respect to ``S`` and every gap vector.
    """
    if S.dim() != 3:
        raise ValueError(f"S must be (B, Lq, Lt), got shape {tuple(S.shape)}")
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    B, LQ, LT = S.shape
    lq = _as_lengths(lq, LQ, B)
    lt = _as_lengths(lt, LT, B)
    n, m = LQ + 1, LT + 1
    n_diag = n + m - 1
    dtype = S.dtype
    g = gaps

    # Cell-wise costs on the prefix grid (B, n, m): M at (i, j) scores S[i-1, j-1]; I at (i, j)
    # consumes query residue i-1 after j target residues; D at (i, j) consumes target j-1 after i.
    Sg = torch.nn.functional.pad(S, (1, 0, 1, 0))
    qio = torch.nn.functional.pad(g.q_ins_open + g.q_ins_ext, (1, 0))[:, :n, None]
    qie = torch.nn.functional.pad(g.q_ins_ext, (1, 0))[:, :n, None]
    tio = (g.t_ins_open + g.t_ins_ext)[:, None, :m]
    tie = g.t_ins_ext[:, None, :m]
    tdo = torch.nn.functional.pad(g.t_del_open + g.t_del_ext, (1, 0))[:, None, :m]
    tde = torch.nn.functional.pad(g.t_del_ext, (1, 0))[:, None, :m]
    qdo = (g.q_del_open + g.q_del_ext)[:, :n, None]
    qde = g.q_del_ext[:, :n, None]
    i_open, i_ext = qio + tio, qie + tie
    d_open, d_ext = tdo + qdo, tde + qde

    start_m, start_g, end_m, end_g = _begin_end_masks(mode, n, m, lq, lt)
    neg = torch.tensor(NEG, dtype=dtype)
    zero = torch.tensor(0.0, dtype=dtype)
    # Start values, pre-shifted to the cell they feed: M at (i, j) from start (i-1, j-1), I at
    # (i, j) from (i-1, j), D at (i, j) from (i, j-1).
    sm = torch.where(start_m, zero, neg)
    sg = torch.where(start_g, zero, neg)
    start_to_m = torch.nn.functional.pad(sm[:, :-1, :-1], (1, 0, 1, 0), value=NEG)
    start_to_i = torch.nn.functional.pad(sg[:, :-1, :], (0, 0, 1, 0), value=NEG)
    start_to_d = torch.nn.functional.pad(sg[:, :, :-1], (1, 0), value=NEG)

    ii = torch.arange(n).view(1, -1, 1)
    jj = torch.arange(m).view(1, 1, -1)
    valid_m = ((ii >= 1) & (jj >= 1)).expand(B, n, m)
    valid_i = (ii >= 1).expand(B, n, m)
    valid_d = (jj >= 1).expand(B, n, m)

    def skew(x: Tensor) -> Tensor:
        return _skew(x.expand(B, n, m).contiguous(), n_diag)

    Sk = skew(Sg)
    io, ie, do, de = skew(i_open), skew(i_ext), skew(d_open), skew(d_ext)
    # costs of entering I from (M, I, D) and D from (M, I, D), stacked on dim 2: (B, D, 3, n)
    i_cost = torch.stack([io, ie, io], dim=2)
    d_cost = torch.stack([do, do, de], dim=2)
    start_m = skew(start_to_m)
    start_i = skew(start_to_i) - io
    start_d = skew(start_to_d) - do
    d_idx = torch.arange(n_diag).view(-1, 1)
    i_idx = torch.arange(n).view(1, -1)
    on_grid = ((d_idx - i_idx) >= 0) & ((d_idx - i_idx) < m)  # (n_diag, n)
    valid = torch.stack([_skew(x.to(dtype), n_diag) > 0.5 for x in (valid_m, valid_i, valid_d)],
                        dim=2) & on_grid[None, :, None, :]  # (B, D, 3, n)
    end = torch.stack([_skew(x.expand(B, n, m).to(dtype), n_diag) > 0.5
                       for x in (end_m, end_g, end_g)], dim=2) & on_grid[None, :, None, :]

    def shift(x: Tensor) -> Tensor:  # out[..., i] = x[..., i - 1]
        return torch.nn.functional.pad(x[..., :-1], (1, 0), value=NEG)

    X1 = X2 = torch.full((B, 3, n), NEG, dtype=dtype)  # states (M, I, D) on diagonals d-1, d-2
    states: list[Tensor] = []
    for d in range(n_diag):
        x2s = shift(X2)
        x1s = shift(X1)
        m_new = Sk[:, d] + _smax1(torch.cat([x2s, start_m[:, d, None]], dim=1), temperature)
        i_new = _smax1(torch.cat([x1s - i_cost[:, d], start_i[:, d, None]], dim=1), temperature)
        d_new = _smax1(torch.cat([X1 - d_cost[:, d], start_d[:, d, None]], dim=1), temperature)
        X = torch.where(valid[:, d], torch.stack([m_new, i_new, d_new], dim=1), neg)
        states.append(X)
        X2, X1 = X1, X

    ends = torch.where(end, torch.stack(states, dim=1), neg)
    total = ends.reshape(B, -1)
    extra = []
    if mode == "local":
        extra.append(torch.zeros(B, 1, dtype=dtype))
    elif mode == "semiglobal":
        extra.append(torch.zeros(B, 2, dtype=dtype))
        # the corners (0, Lt) and (Lq, 0) coincide when a length is zero; counted as given
    if extra:
        total = torch.cat([total, *extra], dim=1)
    if temperature == 0.0:
        return total.amax(dim=1)
    return temperature * torch.logsumexp(total / temperature, dim=1)


def soft_posteriors(
    S: Tensor, gaps: SoftGaps, mode: str = "global", lq: Tensor | None = None,
    lt: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``(log Z, P)``: the log partition function (B,) and match posteriors P (B, Lq, Lt) at T = 1.

    P[b, i, j] is the probability that residues i and j are aligned, obtained as the gradient of
    ``log Z`` with respect to S (works under ``torch.no_grad`` contexts too: grad is enabled here).
    """
    with torch.enable_grad():
        S_ = S.detach().requires_grad_(True)
        gaps_ = SoftGaps(**{f.name: getattr(gaps, f.name).detach() for f in fields(SoftGaps)})
        logz = soft_align(S_, gaps_, mode=mode, temperature=1.0, lq=lq, lt=lt)
        (P,) = torch.autograd.grad(logz.sum(), S_)
    return logz.detach(), P


def _run_costs(g: SoftGaps, b: int, q_gap: np.ndarray, j_of_i: np.ndarray, t_gap: np.ndarray,
               i_of_j: np.ndarray) -> Tensor:
    """Total cost of the I runs (query residues ``q_gap``, each after ``j_of_i`` target residues)
    and D runs (target residues ``t_gap``, each after ``i_of_j`` query residues); a run opens at
    every gapped residue whose predecessor is not gapped."""
    q_open = q_gap & ~np.concatenate([[False], q_gap[:-1]])
    t_open = t_gap & ~np.concatenate([[False], t_gap[:-1]])
    qi = torch.as_tensor(np.flatnonzero(q_gap))
    qo = torch.as_tensor(np.flatnonzero(q_open))
    ti = torch.as_tensor(np.flatnonzero(t_gap))
    to = torch.as_tensor(np.flatnonzero(t_open))
    jq = torch.as_tensor(np.ascontiguousarray(j_of_i))
    it = torch.as_tensor(np.ascontiguousarray(i_of_j))
    return (
        g.q_ins_ext[b, qi].sum() + g.t_ins_ext[b, jq[qi]].sum()
        + g.q_ins_open[b, qo].sum() + g.t_ins_open[b, jq[qo]].sum()
        + g.t_del_ext[b, ti].sum() + g.q_del_ext[b, it[ti]].sum()
        + g.t_del_open[b, to].sum() + g.q_del_open[b, it[to]].sum()
    )


def path_score(
    S: Tensor,
    gaps: SoftGaps,
    index: int,
    pairs: np.ndarray,
    lq: int,
    lt: int,
    mode: str = "global",
) -> Tensor:
    """Log-weight of one alignment (given as its aligned pairs) under the model of ``soft_align``.

    Between two consecutive pairs the query residues against gaps (I run) come first, then the
    target residues (D run) (with the learned model's costs, which use only ``q_ins_*`` and
    ``t_del_*``, the other order scores the same). End overhangs: charged in ``global`` mode,
    free in ``local`` mode; in ``semiglobal`` mode an overhang is free when the other sequence has
    none at that end, otherwise the two paths that charge one overhang whole (the query's as an I
    run, or the target's as a D run) are summed by log-sum-exp: between the best path with these
    pairs and the CRF marginal over all of them (tested). Batch element
    ``index`` of ``S`` and ``gaps`` is used; ``pairs`` is an int (k >= 1, 2) array, strictly
    increasing in both columns.
    """
    if mode not in ("global", "local", "semiglobal"):
        raise ValueError(f"path_score supports global, local and semiglobal, not {mode!r}")
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(p) == 0:
        raise ValueError("path_score needs at least one aligned pair")
    g = gaps
    score = S[index, torch.as_tensor(p[:, 0]), torch.as_tensor(p[:, 1])].sum()

    # Query residue i unaligned: its I run lies after j = (previous pair's target index + 1).
    q_matched = np.zeros(lq, dtype=bool)
    q_matched[p[:, 0]] = True
    prev_j = np.full(lq, -1, dtype=np.int64)
    prev_j[p[:, 0]] = p[:, 1]
    j_of_i = np.maximum.accumulate(prev_j) + 1
    # Target residue j unaligned: its D run comes after the I run, i.e. after i = next pair's
    # query index (Lq after the last pair).
    t_matched = np.zeros(lt, dtype=bool)
    t_matched[p[:, 1]] = True
    next_i = np.full(lt + 1, lq, dtype=np.int64)
    next_i[p[:, 1]] = p[:, 0]
    i_of_j = np.minimum.accumulate(next_i[::-1])[::-1][:lt].copy()
    q_gap = ~q_matched
    t_gap = ~t_matched
    if mode == "global":
        return score - _run_costs(g, index, q_gap, j_of_i, t_gap, i_of_j)
    qr, tr = np.arange(lq), np.arange(lt)
    (i0, j0), (i1, j1) = p[0], p[-1]
    inner = score - _run_costs(g, index, q_gap & (qr > i0) & (qr < i1), j_of_i,
                               t_gap & (tr > j0) & (tr < j1), i_of_j)
    if mode == "local":
        return inner
    none_q, none_t = np.zeros(lq, dtype=bool), np.zeros(lt, dtype=bool)
    ends = []
    for q_end, t_end, j_at, i_at in (
        (qr < i0, tr < j0, j0, i0),            # leading overhangs: start at (0, j0) or (i0, 0)
        (qr > i1, tr > j1, j1 + 1, i1 + 1),    # trailing: end at (Lq, j1 + 1) or (i1 + 1, Lt)
    ):
        if q_end.any() and t_end.any():
            as_i = -_run_costs(g, index, q_end, np.full(lq, j_at), none_t, i_of_j)
            as_d = -_run_costs(g, index, none_q, j_of_i, t_end, np.full(lt, i_at))
            ends.append(torch.logsumexp(torch.stack([as_i, as_d]), dim=0))
    return inner + sum(ends) if ends else inner
