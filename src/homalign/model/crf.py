"""Compiled CRF over alignment paths: exact log Z and its gradient (forward-backward, numba).

The same path model as ``homalign.dp`` and ``homalign.dp.soft`` (three states M, I, D, every
transition allowed, the four modes' start and end cells, the eight ``GapCosts`` vectors) at
temperature 1. :func:`crf_log_partition` computes ``log Z`` and, by the outside pass, its gradient
with respect to S (the match posteriors) and every gap vector (minus the expected number of gap
opens and extensions charged to each position). :class:`CRFLogZ` wraps it as a torch autograd
function: the training loss uses it instead of the anti-diagonal torch DP, which computes the same
numbers (tested) but an order of magnitude more slowly on a CPU.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit
from torch import Tensor

from homalign.dp.soft import SoftGaps

NEG = -1.0e30
_MODES = {"local": 0, "global": 1, "glocal": 2, "semiglobal": 3}


@njit(cache=True, inline="always")
def _lse2(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    if b <= NEG:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(cache=True, inline="always")
def _lse4(a: float, b: float, c: float, d: float) -> float:
    return _lse2(_lse2(a, b), _lse2(c, d))


@njit(cache=True, inline="always")
def _start_m(mode: int, i: int, j: int) -> float:
    if mode == 0 or (mode == 1 and i == 0 and j == 0) or (mode == 2 and i == 0) or (
            mode == 3 and (i == 0 or j == 0)):
        return 0.0
    return NEG


@njit(cache=True, inline="always")
def _start_g(mode: int, i: int, j: int) -> float:
    if mode == 0:
        return NEG
    return _start_m(mode, i, j)


@njit(cache=True, inline="always")
def _end_g(mode: int, i: int, j: int, lq: int, lt: int) -> float:
    if (mode == 1 and i == lq and j == lt) or (mode == 2 and i == lq) or (
            mode == 3 and (i == lq or j == lt)):
        return 0.0
    return NEG


@njit(cache=True, inline="always")
def _end_m(mode: int, i: int, j: int, lq: int, lt: int) -> float:
    if mode == 0:
        return 0.0 if (i >= 1 and j >= 1) else NEG
    return _end_g(mode, i, j, lq, lt)


@njit(cache=True)
def _forward_backward(S, qio, qie, tio, tie, tdo, tde, qdo, qde, mode):  # noqa: ANN001, ANN201
    """log Z, dlogZ/dS and dlogZ/d(kernel vectors) (open costs include the extension)."""
    lq, lt = S.shape
    M = np.full((lq + 1, lt + 1), NEG)
    I = np.full((lq + 1, lt + 1), NEG)  # noqa: E741
    D = np.full((lq + 1, lt + 1), NEG)
    for i in range(lq + 1):
        for j in range(lt + 1):
            if i >= 1 and j >= 1:
                M[i, j] = S[i - 1, j - 1] + _lse4(M[i - 1, j - 1], I[i - 1, j - 1],
                                                  D[i - 1, j - 1], _start_m(mode, i - 1, j - 1))
            if i >= 1:
                go = qio[i - 1] + tio[j]
                ge = qie[i - 1] + tie[j]
                I[i, j] = _lse4(M[i - 1, j] - go, I[i - 1, j] - ge, D[i - 1, j] - go,
                                _start_g(mode, i - 1, j) - go)
            if j >= 1:
                go = tdo[j - 1] + qdo[i]
                ge = tde[j - 1] + qde[i]
                D[i, j] = _lse4(M[i, j - 1] - go, D[i, j - 1] - ge, I[i, j - 1] - go,
                                _start_g(mode, i, j - 1) - go)
    logz = NEG
    for i in range(lq + 1):
        for j in range(lt + 1):
            em = _end_m(mode, i, j, lq, lt)
            eg = _end_g(mode, i, j, lq, lt)
            if em > NEG:
                logz = _lse2(logz, M[i, j])
            if eg > NEG:
                logz = _lse2(logz, _lse2(I[i, j], D[i, j]))
    if mode == 0:
        logz = _lse2(logz, 0.0)
    elif mode == 3:
        logz = _lse2(logz, math.log(2.0))

    BM = np.full((lq + 2, lt + 2), NEG)
    BI = np.full((lq + 2, lt + 2), NEG)
    BD = np.full((lq + 2, lt + 2), NEG)
    for i in range(lq, -1, -1):
        for j in range(lt, -1, -1):
            to_m = S[i, j] + BM[i + 1, j + 1] if (i < lq and j < lt) else NEG
            io = ie = do = de = NEG
            if i < lq:
                io = BI[i + 1, j] - (qio[i] + tio[j])
                ie = BI[i + 1, j] - (qie[i] + tie[j])
            if j < lt:
                do = BD[i, j + 1] - (tdo[j] + qdo[i])
                de = BD[i, j + 1] - (tde[j] + qde[i])
            eg = _end_g(mode, i, j, lq, lt)
            BM[i, j] = _lse4(_end_m(mode, i, j, lq, lt), to_m, io, do)
            BI[i, j] = _lse4(eg, to_m, ie, do)
            BD[i, j] = _lse4(eg, to_m, io, de)

    gS = np.zeros((lq, lt))
    g_qio = np.zeros(lq)
    g_qie = np.zeros(lq)
    g_tio = np.zeros(lt + 1)
    g_tie = np.zeros(lt + 1)
    g_tdo = np.zeros(lt)
    g_tde = np.zeros(lt)
    g_qdo = np.zeros(lq + 1)
    g_qde = np.zeros(lq + 1)
    for i in range(lq + 1):
        for j in range(lt + 1):
            if i >= 1 and j >= 1:
                gS[i - 1, j - 1] = math.exp(M[i, j] + BM[i, j] - logz)
            if i >= 1 and BI[i, j] > NEG:
                go = qio[i - 1] + tio[j]
                ge = qie[i - 1] + tie[j]
                op = _lse2(_lse2(M[i - 1, j], D[i - 1, j]), _start_g(mode, i - 1, j)) - go
                fo = math.exp(op + BI[i, j] - logz)
                fe = math.exp(I[i - 1, j] - ge + BI[i, j] - logz)
                g_qio[i - 1] -= fo
                g_tio[j] -= fo
                g_qie[i - 1] -= fe
                g_tie[j] -= fe
            if j >= 1 and BD[i, j] > NEG:
                go = tdo[j - 1] + qdo[i]
                ge = tde[j - 1] + qde[i]
                op = _lse2(_lse2(M[i, j - 1], I[i, j - 1]), _start_g(mode, i, j - 1)) - go
                fo = math.exp(op + BD[i, j] - logz)
                fe = math.exp(D[i, j - 1] - ge + BD[i, j] - logz)
                g_tdo[j - 1] -= fo
                g_qdo[i] -= fo
                g_tde[j - 1] -= fe
                g_qde[i] -= fe
    return logz, gS, g_qio, g_qie, g_tio, g_tie, g_tdo, g_tde, g_qdo, g_qde


_FIELDS = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
           "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")


def _field_grads(qio, qie, tio, tie, tdo, tde, qdo, qde) -> tuple:  # noqa: ANN001
    """Gradients with respect to the kernel vectors (open costs include the extension) mapped to
    the eight ``GapCosts`` fields, in ``_FIELDS`` order."""
    return (qio, qio + qie, tio, tio + tie, tdo, tdo + tde, qdo, qdo + qde)


def _vector_args(vecs: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    return (vecs["q_ins_open"] + vecs["q_ins_ext"], vecs["q_ins_ext"],
            vecs["t_ins_open"] + vecs["t_ins_ext"], vecs["t_ins_ext"],
            vecs["t_del_open"] + vecs["t_del_ext"], vecs["t_del_ext"],
            vecs["q_del_open"] + vecs["q_del_ext"], vecs["q_del_ext"])


def crf_log_partition(S: np.ndarray, vectors: dict[str, np.ndarray], mode: str = "global"
                      ) -> tuple[float, np.ndarray, dict[str, np.ndarray]]:
    """``(log Z, dlogZ/dS, {field: dlogZ/dfield})`` for one pair, float64.

    ``vectors`` holds the eight ``GapCosts`` fields by name (contract lengths).
    """
    v = {k: np.asarray(vectors[k], dtype=np.float64) for k in _FIELDS}
    out = _forward_backward(np.ascontiguousarray(S, dtype=np.float64), *_vector_args(v),
                            _MODES[mode])
    return float(out[0]), out[1], dict(zip(_FIELDS, _field_grads(*out[2:]), strict=True))


class CRFLogZ(torch.autograd.Function):
    """``log Z`` of one pair as a differentiable torch op (inputs: S then the eight vectors)."""

    @staticmethod
    def forward(ctx, mode: str, S: Tensor, *vecs: Tensor) -> Tensor:  # noqa: ANN001
        logz, gS, grads = crf_log_partition(
            S.detach().cpu().numpy(), {k: v.detach().cpu().numpy() for k, v in zip(_FIELDS, vecs,
                                                                                   strict=True)},
            mode)
        ctx.save_for_backward(torch.as_tensor(gS, dtype=S.dtype),
                              *(torch.as_tensor(grads[k], dtype=S.dtype) for k in _FIELDS))
        return torch.tensor(logz, dtype=S.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN001, ANN205
        saved = ctx.saved_tensors
        return (None, *(grad * g for g in saved))


def _pairs(S: Tensor, gaps: SoftGaps, lq: Tensor, lt: Tensor) -> list[list[Tensor]]:
    """Each pair of a padded batch cut to its lengths: its S, then the eight gap vectors.

    The batch is unbound into its rows first: indexing ``S[b]`` per pair would make each pair's
    backward fill a zero tensor of the whole batch's shape (quadratic in the batch: 13 s of a
    256-pair adapter step), while a row's slice fills one of the row's shape. The same views,
    the same gradients bit for bit (each element gets its one pair's value plus zeros)."""
    rows = S.unbind(0)
    vecs = {k: getattr(gaps, k).unbind(0) for k in _FIELDS}
    out = []
    for b in range(S.shape[0]):
        n, m = int(lq[b]), int(lt[b])
        sizes = {"q_ins": n, "t_ins": m + 1, "t_del": m, "q_del": n + 1}
        out.append([rows[b][:n, :m], *(vecs[k][b][: sizes[k[:5]]] for k in _FIELDS)])
    return out


def crf_log_partition_batch(S: Tensor, gaps: SoftGaps, lq: Tensor, lt: Tensor,
                            mode: str = "global") -> Tensor:
    """(B,) ``log Z`` of a padded batch (each pair cut to its lengths), differentiable."""
    return torch.stack([CRFLogZ.apply(mode, *pair) for pair in _pairs(S, gaps, lq, lt)])


class CRFPosterior(torch.autograd.Function):
    """The match posteriors ``P = dlogZ/dS`` of one pair as a differentiable torch op.

    The backward pass is a Hessian-vector product of ``log Z``: for an upstream gradient ``v`` of
    P, ``dL/dS = H_SS v`` and ``dL/dgaps = H_gS v``, i.e. the directional derivative of the whole
    gradient of ``log Z`` along S-direction ``v``. It is computed by a central difference of two
    more compiled forward-backward passes at ``S +- eps v`` (float64; ``eps`` scaled to ``v`` so
    the step is 1e-4 nats at most: truncation ~1e-8, rounding ~1e-12 relative). So a loss on the
    posteriors (what MEA decoding reads) trains the model for three CRF passes per pair.
    """

    @staticmethod
    def forward(ctx, mode: str, S: Tensor, *vecs: Tensor) -> Tensor:  # noqa: ANN001
        S64 = np.ascontiguousarray(S.detach().cpu().numpy(), dtype=np.float64)
        v = {k: np.asarray(x.detach().cpu().numpy(), dtype=np.float64)
             for k, x in zip(_FIELDS, vecs, strict=True)}
        args = _vector_args(v)
        out = _forward_backward(S64, *args, _MODES[mode])
        ctx.mode, ctx.S64, ctx.args, ctx.dtype = mode, S64, args, S.dtype
        return torch.as_tensor(out[1], dtype=S.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN001, ANN205
        g = np.asarray(grad.detach().cpu().numpy(), dtype=np.float64)
        scale = float(np.abs(g).max())
        if scale == 0.0:
            return (None, torch.zeros_like(grad),
                    *(torch.zeros(len(a), dtype=ctx.dtype) for a in ctx.args))
        eps = 1e-4 / scale
        plus = _forward_backward(ctx.S64 + eps * g, *ctx.args, _MODES[ctx.mode])
        minus = _forward_backward(ctx.S64 - eps * g, *ctx.args, _MODES[ctx.mode])
        d = [(a - b) / (2 * eps) for a, b in zip(plus[1:], minus[1:], strict=True)]
        return (None, torch.as_tensor(d[0], dtype=ctx.dtype),
                *(torch.as_tensor(x, dtype=ctx.dtype) for x in _field_grads(*d[1:])))


def crf_posterior_batch(S: Tensor, gaps: SoftGaps, lq: Tensor, lt: Tensor,
                        mode: str = "global") -> list[Tensor]:
    """Each pair's (lq, lt) match posteriors, differentiable (:class:`CRFPosterior`)."""
    return [CRFPosterior.apply(mode, *pair) for pair in _pairs(S, gaps, lq, lt)]


class ScoreLogZ(torch.autograd.Function):
    """``log Z`` of one pair, differentiable in S only (fixed gap costs): the gradient is the
    posterior match matrix from the fast scaled forward-backward of :mod:`homalign.dp.posterior`.
    """

    @staticmethod
    def forward(ctx, mode: str, S: Tensor, gaps) -> Tensor:  # noqa: ANN001
        from homalign.dp.posterior import forward_backward

        P, logz = forward_backward(np.ascontiguousarray(S.detach().cpu().numpy(),
                                                        dtype=np.float32), gaps, mode)
        ctx.save_for_backward(torch.as_tensor(P, dtype=S.dtype))
        return torch.tensor(logz, dtype=S.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN001, ANN205
        (P,) = ctx.saved_tensors
        return None, grad * P, None


def score_log_partition_batch(S: Tensor, gaps: SoftGaps, lq: Tensor, lt: Tensor,
                              mode: str = "local") -> Tensor:
    """(B,) ``log Z`` of a padded batch, differentiable in S only (the gaps are constants)."""
    from homalign.dp import GapCosts

    out = []
    rows = S.unbind(0)  # not S[b] per pair: see _pairs
    for b in range(S.shape[0]):
        n, m = int(lq[b]), int(lt[b])
        g = GapCosts(**gaps.to_numpy(b, n, m))
        out.append(ScoreLogZ.apply(mode, rows[b][:n, :m], g))
    return torch.stack(out)


__all__ = ["CRFLogZ", "CRFPosterior", "ScoreLogZ", "crf_log_partition",
           "crf_log_partition_batch", "crf_posterior_batch", "score_log_partition_batch"]
