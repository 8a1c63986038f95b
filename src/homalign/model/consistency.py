"""Intermediate-sequence consistency of alignment posteriors (ProbCons' transformation).

Two remote homologues x and y are often each closer to some third sequence z than to one
another. The model's posteriors P(x~z) and P(z~y) then carry evidence about x~y that P(x~y)
alone misses: the probability that x_i and y_j are aligned *through* z is
``sum_k P(x_i~z_k) P(z_k~y_j)``, the matrix product. ProbCons (Do et al. 2005, Genome Res.
15:330) averages this over the sequences of a family; for a pair with homologues ``Z`` from a
sequence database (the HHpred/PROMALS idea of enriching a pair by database homologues, here
without building an MSA),

    P'(x, y) = (2 P(x~y) + sum_{z in Z} P(x~z) P(z~y)) / (2 + |Z|),

the 2 being z = x and z = y themselves (P(x~x) = I). Each product is at most 1 per row and
column and sharpens where the paths agree, so MEA decoding reads P' at a lower threshold than P
(:data:`CONSISTENCY_THRESHOLD`, chosen on held-out train pairs; docs/learned.md).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: MEA threshold for consistency-transformed posteriors (held-out train pairs: 0.15-0.2 best).
CONSISTENCY_THRESHOLD = 0.2

#: Posteriors below this are taken as 0 in the products: a product of two larger ones is a normal
#: float32 (>= 2**-126). Subnormal products made the matrix products ~10x slower on x86 (a
#: microcode assist each); the change in P' is below 2**-63 * Lz, far under float32's resolution
#: of any value MEA decoding can tell from 0.
PRODUCT_FLOOR = np.float32(2.0 ** -63)


def _floored(P: np.ndarray) -> np.ndarray:
    return np.where(P >= PRODUCT_FLOOR, P, np.float32(0.0))


def consistency_transform(P_xy: np.ndarray,
                          through: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``(2 P_xy + sum_z P_xz @ P_zy) / (2 + |Z|)`` for ``through`` = [(P_xz, P_zy), ...], the
    factors' entries below :data:`PRODUCT_FLOOR` taken as 0.

    Shapes: ``P_xy`` (Lx, Ly), each ``P_xz`` (Lx, Lz) and ``P_zy`` (Lz, Ly). With no
    intermediates the result is ``P_xy`` itself.

    Raises:
        ValueError: a matrix whose shape does not chain from x to y.
    """
    P_xy = np.asarray(P_xy, dtype=np.float32)
    acc = 2.0 * P_xy
    n = 0
    for k, (P_xz, P_zy) in enumerate(through):
        P_xz = np.asarray(P_xz, dtype=np.float32)
        P_zy = np.asarray(P_zy, dtype=np.float32)
        if (P_xz.ndim != 2 or P_zy.ndim != 2 or P_xz.shape[0] != P_xy.shape[0]
                or P_zy.shape[1] != P_xy.shape[1] or P_xz.shape[1] != P_zy.shape[0]):
            raise ValueError(f"intermediate {k}: shapes {P_xz.shape} and {P_zy.shape} do not "
                             f"chain a {P_xy.shape} posterior")
        acc += _floored(P_xz) @ _floored(P_zy)
        n += 1
    return acc / (2.0 + n)
