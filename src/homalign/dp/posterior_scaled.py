"""Forward-backward in probability space with per-row scaling, and a proof that it was exact enough.

Same model, alignments and results as the log-space reference in :mod:`homalign.dp.posterior`,
computed with products and sums of positive float64 numbers instead of log-sum-exp: the weights
``E = exp(S / T)`` and the gap factors ``exp(-cost / T)`` are computed once, every row of the
forward (backward) matrices is divided by its largest value (the begin/end weight 1 included) and
the logarithms of those row scales are kept. Sums of positive numbers have no cancellation, so
every value carries a relative error of a few ulps per DP step, except where a value falls into
the subnormal range, where an operation can lose up to ``2**-1075`` in absolute terms. (The
weights come from :func:`homalign.dp.vexp.exp_scaled`, a SIMD ``exp`` within ~1 ulp.)

Those absolute losses are bounded *a posteriori*. A loss ``d`` in a forward value of state X at
cell c changes ``Z`` by ``d * B_X(c)`` and any ``P[i, j]`` by at most ``d * B_X(c) / Z`` (every
path from c to (i, j) is part of ``B_X(c)``); a loss in a backward value is bounded the same way by
``F_X(c) / Z``. With the row scales ``f_i`` and ``b_i`` (each row's largest value) the total is
at most ``2 * delta * sum_i exp(f_i + b_i) / Z`` where ``delta`` bounds the per-row loss. The
kernels return the logarithm of that bound; callers fall back to the log-space reference when it
is not negligible (or when a weight overflows), so results never depend on luck. On the learned
aligner's HOMSTRAD dev pairs the bound is 1e-315 to 1e-300; only extreme inputs (scores of tens
of nats per cell over hundreds of residues, temperatures near 0) take the fallback.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from homalign.dp.modes import GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL
from homalign.dp.vexp import exp_scaled

__all__ = ["SCALED_LOG_TOLERANCE", "gap_factors", "scaled_forward_backward"]

SCALED_LOG_TOLERANCE = math.log(1e-10)
"""Largest accepted log error bound: posteriors and ``Z / Z_true - 1`` within 1e-10."""

_LOG_HALF_SUBNORMAL = -1075.0 * math.log(2.0)  # log(2**-1075): loss of one subnormal rounding
_OPS_PER_CELL = 64.0  # generous count of lossy operations per cell and row (all states, P)
_MAX_FACTOR = 1e200  # weights or gap factors above this: use the log-space path


@njit(cache=True, nogil=True, inline="always")
def _lse2(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) for finite or -inf arguments."""
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(cache=True, nogil=True)
def _border_weights(mode: int, lq: int, lt: int):  # noqa: ANN202
    """(begin row 0, begin column 0, end row Lq, end column Lt) as weights 0.0 / 1.0."""
    b_row0 = np.zeros(lt + 1)
    b_col0 = np.zeros(lq + 1)
    e_row = np.zeros(lt + 1)
    e_col = np.zeros(lq + 1)
    if mode == GLOBAL:
        b_row0[0] = 1.0
        b_col0[0] = 1.0
        e_row[lt] = 1.0
        e_col[lq] = 1.0
    elif mode == GLOCAL:
        b_row0[:] = 1.0
        b_col0[0] = 1.0
        e_row[:] = 1.0
        e_col[lq] = 1.0
    elif mode == SEMIGLOBAL:
        b_row0[:] = 1.0
        b_col0[:] = 1.0
        e_row[:] = 1.0
        e_col[:] = 1.0
    return b_row0, b_col0, e_row, e_col


@njit(cache=True, nogil=True)
def _forward_scaled(E, fqio, fqie, ftio, ftie, ftdo, ftde, fqdo, fqde, mode, fm, lsf, usf):  # noqa: ANN001, ANN201, E501
    """Scaled forward pass.

    Fills ``fm`` (float64 (Lq+1, Lt+1)) with the match weights of row i divided by
    ``exp(lsf[i])``; ``usf[i]`` is the largest scale row i was ever held in (for the loss bound).
    Returns ``(log Z, ok)``; ok is False when a row overflowed or vanished.
    """
    lq, lt = E.shape
    local = mode == LOCAL
    b_row0, b_col0, e_row, e_col = _border_weights(mode, lq, lt)
    ip = np.zeros(lt + 1)
    dp = np.zeros(lt + 1)
    ic = np.zeros(lt + 1)
    dc = np.zeros(lt + 1)
    bprev = np.zeros(lt + 1)  # begin weights of the previous row, in its scaled units
    # ---- row 0: begin weights and (non-local) the D chain from them; units exp(0)
    fm[0, :] = 0.0
    mx = 1.0 if local else 0.0
    q_o = fqdo[0]
    q_e = fqde[0]
    for j in range(1, lt + 1):
        dp[j] = ftdo[j - 1] * q_o * b_row0[j - 1] + ftde[j - 1] * q_e * dp[j - 1]
    for j in range(lt + 1):
        mx = max(mx, max(b_row0[j], dp[j]))
    if not (mx > 0.0 and mx < np.inf):
        return 0.0, False
    inv = 1.0 / mx
    for j in range(lt + 1):
        dp[j] *= inv
        bprev[j] = b_row0[j] * inv
    ls = math.log(mx)
    lsf[0] = ls
    usf[0] = max(0.0, ls)
    log_z = 0.0 if local else -np.inf  # local: the empty alignment
    if mode == SEMIGLOBAL:  # the corner (0, Lt) ends an alignment
        log_z = _lse2(log_z, ls + math.log(bprev[lt] + dp[lt]))
    beg = inv  # local begin weight 1 in the previous row's units
    for i in range(1, lq + 1):
        a_o = fqio[i - 1]
        a_e = fqie[i - 1]
        r_o = fqdo[i]
        r_e = fqde[i]
        b0 = b_col0[i] * math.exp(-ls) if b_col0[i] > 0.0 else 0.0  # B(i, 0), previous units
        # vertical moves (M, I) from the previous row
        ic[0] = a_o * ftio[0] * (bprev[0] + fm[i - 1, 0] + dp[0]) + a_e * ftie[0] * ip[0]
        fm[i, 0] = 0.0
        if local:
            for j in range(1, lt + 1):
                fm[i, j] = E[i - 1, j - 1] * (beg + fm[i - 1, j - 1] + ip[j - 1] + dp[j - 1])
        else:
            for j in range(1, lt + 1):
                fm[i, j] = E[i - 1, j - 1] * (bprev[j - 1] + fm[i - 1, j - 1] + ip[j - 1]
                                              + dp[j - 1])
        for j in range(1, lt + 1):
            ic[j] = a_o * ftio[j] * (bprev[j] + fm[i - 1, j] + dp[j]) + a_e * ftie[j] * ip[j]
        # horizontal moves (D), left to right, and the row maximum
        dc[0] = 0.0
        dl = r_o * ftdo[0] * (b0 + ic[0])
        dc[1] = dl
        mx = max(max(b0, ic[0]), beg if local else 0.0)
        for j in range(1, lt + 1):
            m = fm[i, j]
            iv = ic[j]
            mx = max(mx, max(max(m, iv), dl))
            if j < lt:
                dl = ftdo[j] * r_o * (m + iv) + ftde[j] * r_e * dl
                dc[j + 1] = dl
        if not (mx > 0.0 and mx < np.inf):
            return 0.0, False
        inv = 1.0 / mx
        for j in range(lt + 1):
            fm[i, j] *= inv
            ic[j] *= inv
            dc[j] *= inv
        ls_new = ls + math.log(mx)
        lsf[i] = ls_new
        usf[i] = max(ls, ls_new)
        ls = ls_new
        b0 *= inv  # now in this row's units
        # ends
        if local:
            tot = 0.0
            for j in range(1, lt + 1):
                tot += fm[i, j]
            if tot > 0.0:
                log_z = _lse2(log_z, ls + math.log(tot))
        else:
            if e_col[i] > 0.0 and i < lq:
                log_z = _lse2(log_z, ls + math.log(fm[i, lt] + ic[lt] + dc[lt]))
            if i == lq:
                tot = b0 * e_row[0]
                for j in range(lt + 1):
                    if e_row[j] > 0.0:
                        tot += fm[i, j] + ic[j] + dc[j]
                if tot > 0.0:
                    log_z = _lse2(log_z, ls + math.log(tot))
        ip, ic = ic, ip
        dp, dc = dc, dp
        bprev[:] = 0.0
        bprev[0] = b0
        if local:
            beg = math.exp(-ls)
    return log_z, True


@njit(cache=True, nogil=True)
def _backward_scaled(  # noqa: ANN202
    E, fqio, fqie, ftio, ftie, ftdo, ftde, fqdo, fqde, mode, fm, lsf, usf, log_z,  # noqa: ANN001
    post, want_post,  # noqa: ANN001
):
    """Scaled backward pass; writes P into ``post`` (float32 (Lq, Lt)) when ``want_post``.

    Returns ``(log of the error bound, ok)`` (see the module docstring).
    """
    lq, lt = E.shape
    local = mode == LOCAL
    _b_row0, _b_col0, e_row, e_col = _border_weights(mode, lq, lt)
    bm_n = np.zeros(lt + 2)  # row i + 1
    bi_n = np.zeros(lt + 2)
    bm_c = np.zeros(lt + 2)  # row i
    bi_c = np.zeros(lt + 2)
    vm = np.zeros(lt + 1)
    vi = np.zeros(lt + 1)
    vd = np.zeros(lt + 1)
    ls = 0.0  # scale of row i + 1
    bound_m = -np.inf  # running log-sum-exp of usf[i] + usb[i]
    for i in range(lq, -1, -1):
        row_has_end = local or i == lq or e_col[i] > 0.0
        end_w = math.exp(-ls) if row_has_end else 0.0  # an end weight 1 in row i + 1's units
        # vertical and diagonal moves (from row i + 1)
        if i < lq:
            a_o = fqio[i]
            a_e = fqie[i]
            for j in range(lt):
                to_m = E[i, j] * bm_n[j + 1]
                up = bi_n[j]
                vm[j] = to_m + a_o * ftio[j] * up
                vi[j] = to_m + a_e * ftie[j] * up
                vd[j] = vm[j]
            up = bi_n[lt]
            vm[lt] = a_o * ftio[lt] * up
            vi[lt] = a_e * ftie[lt] * up
            vd[lt] = vm[lt]
        else:
            for j in range(lt + 1):
                vm[j] = 0.0
                vi[j] = 0.0
                vd[j] = 0.0
        # end weights
        if local:
            for j in range(lt + 1):
                vm[j] += end_w
        else:
            if i == lq:
                for j in range(lt + 1):
                    if e_row[j] > 0.0:
                        vm[j] += end_w
                        vi[j] += end_w
                        vd[j] += end_w
            if e_col[i] > 0.0 and not (i == lq and e_row[lt] > 0.0):
                vm[lt] += end_w
                vi[lt] += end_w
                vd[lt] += end_w
        # horizontal moves (D), right to left, and the row maximum
        r_o = fqdo[i]
        r_e = fqde[i]
        bd = vd[lt]
        bm_c[lt] = vm[lt]
        bi_c[lt] = vi[lt]
        mx = end_w if row_has_end else 0.0
        mx = max(mx, max(max(vm[lt], vi[lt]), bd))
        for j in range(lt - 1, -1, -1):
            d_o = ftdo[j] * r_o * bd
            m = vm[j] + d_o
            iv = vi[j] + d_o
            bd = vd[j] + ftde[j] * r_e * bd
            bm_c[j] = m
            bi_c[j] = iv
            mx = max(mx, max(max(m, iv), bd))
        if not (mx > 0.0 and mx < np.inf):
            return 0.0, False
        inv = 1.0 / mx
        for j in range(lt + 1):
            bm_c[j] *= inv
            bi_c[j] *= inv
        ls_new = ls + math.log(mx)
        bound_m = _lse2(bound_m, usf[i] + max(ls, ls_new))
        ls = ls_new
        if want_post and i >= 1:
            factor = math.exp(lsf[i] + ls - log_z)
            if not factor < np.inf:
                return 0.0, False
            for j in range(1, lt + 1):
                post[i - 1, j - 1] = np.float32(fm[i, j] * bm_c[j] * factor)
        bm_n, bm_c = bm_c, bm_n
        bi_n, bi_c = bi_c, bi_n
    return bound_m, True


def gap_factors(vecs: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], float]:
    """``exp(-v)`` of the eight (temperature-divided) kernel cost vectors, and the largest
    combined factor (query part times target part) a transition can have."""
    facs = tuple(np.exp(-v) for v in vecs)

    def top(v: np.ndarray) -> float:
        return float(v.max()) if v.size else 1.0

    fqio, fqie, ftio, ftie, ftdo, ftde, fqdo, fqde = facs
    gmax = max(top(fqio) * top(ftio), top(fqie) * top(ftie),
               top(ftdo) * top(fqdo), top(ftde) * top(fqde))
    return facs, gmax


def scaled_forward_backward(
    S: np.ndarray, vecs: tuple[np.ndarray, ...], code: int, temperature: float,
    want_post: bool = True,
) -> tuple[np.ndarray | None, float, bool]:
    """``(P or None, log Z, ok)`` by the scaled kernels; ``ok`` is False when the a-posteriori
    bound (or an overflow) says the log-space path must be used instead.

    ``S`` is the validated float32 score matrix (not yet divided by the temperature), ``vecs``
    the eight float64 kernel cost vectors already divided by it, ``code`` the mode code.
    """
    lq, lt = S.shape
    inv_t = 1.0 / float(temperature)
    emax = math.exp(min(float(S.max()) * inv_t, 709.0))  # max(E); only its size matters
    facs, gmax = gap_factors(vecs)
    amp = max(1.0, emax, gmax)
    if not amp < _MAX_FACTOR:
        return None, 0.0, False
    fm = np.empty((lq + 1, lt + 1), dtype=np.float64)
    E = exp_scaled(S, inv_t, np.empty((lq, lt), dtype=np.float64), fm)  # fm as scratch
    lsf = np.empty(lq + 1, dtype=np.float64)
    usf = np.empty(lq + 1, dtype=np.float64)
    log_z, ok = _forward_scaled(E, *facs, code, fm, lsf, usf)
    if not ok or not math.isfinite(log_z):
        return None, 0.0, False
    post = np.empty((lq, lt), dtype=np.float32) if want_post else np.empty((0, 0), np.float32)
    bound_m, ok = _backward_scaled(E, *facs, code, fm, lsf, usf, log_z, post, want_post)
    if not ok:
        return None, 0.0, False
    log_delta = math.log(2.0 * _OPS_PER_CELL * (lt + 2)) + 2.0 * math.log(amp) + _LOG_HALF_SUBNORMAL
    if not log_delta + bound_m - log_z <= SCALED_LOG_TOLERANCE:
        return None, 0.0, False
    return (post if want_post else None), float(log_z), True
