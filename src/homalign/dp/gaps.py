"""Position-specific affine gap costs (:class:`GapCosts`).

All costs are numbers *subtracted* from the alignment score (normally positive).

* An "I" run (query residues ``i0..i1`` against gaps), lying after ``j`` consumed target residues
  (``0 <= j <= Lt``) costs
  ``(q_ins_open[i0] + t_ins_open[j]) + sum_{i=i0..i1} (q_ins_ext[i] + t_ins_ext[j])``.
* A "D" run (target residues ``j0..j1`` against gaps), lying after ``i`` consumed query residues
  (``0 <= i <= Lq``) costs
  ``(t_del_open[j0] + q_del_open[i]) + sum_{j=j0..j1} (t_del_ext[j] + q_del_ext[i])``.

So with :meth:`GapCosts.uniform` a gap of length ``k`` costs ``open + k * extend`` (BLAST
convention: open=11, extend=1 charges 12 for a one-residue gap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

__all__ = ["GapCosts", "KernelCosts", "SideCosts"]

#: The eight per-position vectors the DP kernels consume, in this order (see ``kernel_vectors``).
KernelCosts = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray,
    np.ndarray, np.ndarray, np.ndarray, np.ndarray,
]


_ZEROS = np.zeros(0, dtype=np.float32)


def _zeros(n: int) -> np.ndarray:
    """A shared read-only float32 zero vector of at least ``n`` entries (grown on demand)."""
    global _ZEROS
    z = _ZEROS
    if z.shape[0] < n:
        z = np.zeros(max(n, 2 * z.shape[0], 1024), dtype=np.float32)
        z.setflags(write=False)
        _ZEROS = z
    return z


def _vector(name: str, value: object, length: int) -> np.ndarray:
    """Return ``value`` as a read-only float32 vector of ``length``, or raise ValueError."""
    arr = np.array(value, dtype=np.float32, copy=True)
    if arr.ndim == 0:
        arr = np.full(length, arr, dtype=np.float32)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise ValueError(f"GapCosts.{name} must have length {length}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"GapCosts.{name} must be finite")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class SideCosts:
    """One sequence's half of a :class:`GapCosts`, validated once and shared by all its pairs.

    ``residue_open``/``residue_ext`` (L,): the costs of this sequence's residues against gaps
    (a query's ``q_ins_*``, a target's ``t_del_*``); ``slot_open``/``slot_ext`` (L + 1,): the
    costs added to a run of the other sequence's residues lying in a slot of this one (a
    query's ``q_del_*``, a target's ``t_ins_*``). Stored as read-only float32 copies, with the
    kernels' ``open + ext`` sums; :meth:`GapCosts.from_sides` pairs two of them without copying.
    """

    residue_open: np.ndarray
    residue_ext: np.ndarray
    slot_open: np.ndarray
    slot_ext: np.ndarray

    def __post_init__(self) -> None:
        n = int(np.asarray(self.residue_open).reshape(-1).shape[0])
        for name, length in (("residue_open", n), ("residue_ext", n), ("slot_open", n + 1),
                             ("slot_ext", n + 1)):
            object.__setattr__(self, name, _vector(name, getattr(self, name), length))
        for name, a, b in (("residue_sum", self.residue_open, self.residue_ext),
                           ("slot_sum", self.slot_open, self.slot_ext)):
            v = a + b
            v.setflags(write=False)
            object.__setattr__(self, name, v)
        vecs = (self.residue_open, self.residue_ext, self.slot_open, self.slot_ext,
                self.residue_sum, self.slot_sum)
        object.__setattr__(self, "nonnegative", all(bool((v >= 0).all()) for v in vecs[:4]))
        object.__setattr__(self, "constant",
                           all(v.shape[0] <= 1 or v.min() == v.max() for v in vecs))

    def __len__(self) -> int:
        return int(self.residue_open.shape[0])


@dataclass(frozen=True, eq=False)
class GapCosts:
    """Position-specific affine gap costs for a query of length Lq and a target of length Lt.

    Construct with keyword arrays (all eight required), :meth:`from_vectors` (missing ones are
    zero) or :meth:`uniform`. Lengths: ``q_ins_*`` Lq, ``t_ins_*`` Lt + 1, ``t_del_*`` Lt,
    ``q_del_*`` Lq + 1. Vectors are stored as read-only float32 copies.
    """

    q_ins_open: np.ndarray
    q_ins_ext: np.ndarray
    t_ins_open: np.ndarray
    t_ins_ext: np.ndarray
    t_del_open: np.ndarray
    t_del_ext: np.ndarray
    q_del_open: np.ndarray
    q_del_ext: np.ndarray

    def __post_init__(self) -> None:
        lq = int(np.asarray(self.q_ins_open).reshape(-1).shape[0])
        lt = int(np.asarray(self.t_del_open).reshape(-1).shape[0])
        lengths = {
            "q_ins_open": lq, "q_ins_ext": lq, "t_ins_open": lt + 1, "t_ins_ext": lt + 1,
            "t_del_open": lt, "t_del_ext": lt, "q_del_open": lq + 1, "q_del_ext": lq + 1,
        }
        for name, length in lengths.items():
            object.__setattr__(self, name, _vector(name, getattr(self, name), length))

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_vectors(cls, lq: int, lt: int, **vectors: object) -> GapCosts:
        """Build from any subset of the eight vectors (by name); the others are zero."""
        names = [f.name for f in fields(cls)]
        unknown = set(vectors) - set(names)
        if unknown:
            raise ValueError(f"unknown GapCosts vectors: {sorted(unknown)}")
        sizes = {"q_ins": lq, "t_ins": lt + 1, "t_del": lt, "q_del": lq + 1}
        full = {n: vectors.get(n, np.zeros(sizes[n[:5]], dtype=np.float32)) for n in names}
        return cls(**full)

    @classmethod
    def uniform(cls, lq: int, lt: int, open: float = 11.0, extend: float = 1.0) -> GapCosts:
        """Same affine cost everywhere: a gap of length k costs ``open + k * extend``."""
        if lq < 0 or lt < 0:
            raise ValueError(f"lengths must be >= 0, got Lq={lq}, Lt={lt}")
        return cls.from_vectors(
            lq, lt,
            q_ins_open=np.full(lq, open, dtype=np.float32),
            q_ins_ext=np.full(lq, extend, dtype=np.float32),
            t_del_open=np.full(lt, open, dtype=np.float32),
            t_del_ext=np.full(lt, extend, dtype=np.float32),
        )

    @classmethod
    def zeros(cls, lq: int, lt: int) -> GapCosts:
        """Free gaps (used by maximum-accuracy decoding): views of one shared read-only zero
        vector, no copy per call."""
        if lq < 0 or lt < 0:
            raise ValueError(f"lengths must be >= 0, got Lq={lq}, Lt={lt}")
        z = _zeros(max(lq, lt) + 1)
        g = cls._shared(z[:lq], z[:lq], z[:lt + 1], z[:lt + 1], z[:lt], z[:lt], z[:lq + 1],
                        z[:lq + 1])
        g.__dict__["nonnegative"] = True
        g.__dict__["_constant_costs"] = (0.0, 0.0, 0.0, 0.0)
        return g

    @classmethod
    def query_against_many(cls, q_ins_open: object, q_ins_ext: object,
                           t_del_open: Sequence[object], t_del_ext: Sequence[object]
                           ) -> list[GapCosts]:
        """``[from_vectors(Lq, Lt_k, q_ins_open=..., q_ins_ext=..., t_del_open=t_del_open[k],
        t_del_ext=t_del_ext[k]) for each k]`` (the learned aligner's gap structure, one query
        against many targets), the same values and checks, but the query's vectors and the zero
        vectors are validated once and shared read-only, and the targets' are views of one
        validated copy: no eight copies per target."""
        n = len(t_del_open)
        if len(t_del_ext) != n:
            raise ValueError(f"t_del_open and t_del_ext differ in length: {n} and "
                             f"{len(t_del_ext)}")
        qo = np.asarray(q_ins_open, dtype=np.float32)
        if qo.ndim != 1:
            raise ValueError(f"GapCosts.q_ins_open must be a vector, got shape {qo.shape}")
        lq = qo.shape[0]
        qo, qe = _vector("q_ins_open", qo, lq), _vector("q_ins_ext", q_ins_ext, lq)
        opens = [np.asarray(v, dtype=np.float32) for v in t_del_open]
        exts = [np.asarray(v, dtype=np.float32) for v in t_del_ext]
        lts = [int(v.shape[0]) if v.ndim == 1 else -1 for v in opens]
        for k, (a, b, lt) in enumerate(zip(opens, exts, lts, strict=True)):
            for name, v in (("t_del_open", a), ("t_del_ext", b)):
                if v.ndim != 1 or v.shape[0] != lt:
                    raise ValueError(f"GapCosts.{name}[{k}] must be a vector of the target's "
                                     f"length {max(lt, 0)}, got shape {v.shape}")
        total = sum(lts)
        to = _vector("t_del_open", np.concatenate(opens or [_zeros(0)]), total)
        te = _vector("t_del_ext", np.concatenate(exts or [_zeros(0)]), total)
        z = _zeros(max([lq, *lts]) + 1)
        q_sum = qo + qe
        t_sum = to + te
        for v in (q_sum, t_sum):
            v.setflags(write=False)
        q_const = lq <= 1 or (qo.min() == qo.max() and qe.min() == qe.max())
        q_nonneg = bool((qo >= 0).all() and (qe >= 0).all())
        out, s = [], 0
        for lt in lts:
            a, b = s, s + lt
            g = cls._shared(qo, qe, z[:lt + 1], z[:lt + 1], to[a:b], te[a:b], z[:lq + 1],
                            z[:lq + 1])
            g.__dict__["_kernel_vectors"] = (q_sum, qe, z[:lt + 1], z[:lt + 1], t_sum[a:b],
                                             te[a:b], z[:lq + 1], z[:lq + 1])
            if not q_const:
                g.__dict__["_constant_costs"] = None
            if not q_nonneg:
                g.__dict__["nonnegative"] = False
            out.append(g)
            s = b
        return out

    @classmethod
    def from_sides(cls, query: SideCosts, target: SideCosts) -> GapCosts:
        """``GapCosts(q_ins_*=query.residue_*, q_del_*=query.slot_*, t_del_*=target.residue_*,
        t_ins_*=target.slot_*)``: the same values, but the two sides' validated vectors (and
        their kernel sums) are shared, not copied and checked again for every pair."""
        g = cls._shared(query.residue_open, query.residue_ext, target.slot_open,
                        target.slot_ext, target.residue_open, target.residue_ext,
                        query.slot_open, query.slot_ext)
        g.__dict__["_kernel_vectors"] = (query.residue_sum, query.residue_ext, target.slot_sum,
                                         target.slot_ext, target.residue_sum,
                                         target.residue_ext, query.slot_sum, query.slot_ext)
        g.__dict__["nonnegative"] = query.nonnegative and target.nonnegative
        if not (query.constant and target.constant):
            g.__dict__["_constant_costs"] = None
        return g

    @classmethod
    def _shared(cls, *vectors: np.ndarray) -> GapCosts:
        """A GapCosts of eight already validated read-only float32 vectors (in field order),
        stored as given, not copied."""
        g = object.__new__(cls)
        for f, v in zip(fields(cls), vectors, strict=True):
            object.__setattr__(g, f.name, v)
        return g

    # ---------------------------------------------------------------- views
    @property
    def lq(self) -> int:
        """Query length these costs are for."""
        return int(self.q_ins_open.shape[0])

    @property
    def lt(self) -> int:
        """Target length these costs are for."""
        return int(self.t_del_open.shape[0])

    def check_shape(self, lq: int, lt: int) -> None:
        """Raise ValueError unless these costs fit a (lq, lt) score matrix."""
        if (self.lq, self.lt) != (lq, lt):
            raise ValueError(
                f"GapCosts are for a {self.lq}x{self.lt} problem, score matrix is {lq}x{lt}"
            )

    def kernel_vectors(self) -> KernelCosts:
        """The eight float32 vectors the kernels use (computed once, read-only).

        ``(qio, qie, tio, tie, tdo, tde, qdo, qde)`` where an I column for query residue ``i``
        at target column ``j`` costs ``qio[i] + tio[j]`` if it opens a run and
        ``qie[i] + tie[j]`` if it extends one; a D column for target residue ``j`` after ``i``
        query residues costs ``tdo[j] + qdo[i]`` (open) or ``tde[j] + qde[i]`` (extend).
        """
        return self._kernel_vectors

    @cached_property
    def _kernel_vectors(self) -> KernelCosts:
        vecs = (
            self.q_ins_open + self.q_ins_ext, self.q_ins_ext,
            self.t_ins_open + self.t_ins_ext, self.t_ins_ext,
            self.t_del_open + self.t_del_ext, self.t_del_ext,
            self.q_del_open + self.q_del_ext, self.q_del_ext,
        )
        for v in vecs:
            v.setflags(write=False)
        return vecs

    @cached_property
    def nonnegative(self) -> bool:
        """Whether all eight vectors are >= 0 (so opening never beats extending and gaps never
        add to the score: the condition of the fast position-specific score-only kernel)."""
        return all(bool((getattr(self, f.name) >= 0).all()) for f in fields(self))

    def constant_costs(self) -> tuple[float, float, float, float] | None:
        """``(go_I, ge_I, go_D, ge_D)`` if every column cost is position-independent, else None.

        Only returned when ``go >= ge >= 0`` (opening never beats extending, gaps never add to
        the score), the condition under which the fast constant-cost kernels give bit-identical
        results to the general one. Computed once.
        """
        return self._constant_costs

    @cached_property
    def _constant_costs(self) -> tuple[float, float, float, float] | None:
        vecs = self.kernel_vectors()
        for v in vecs:
            if v.shape[0] > 1 and v.min() != v.max():
                return None
        first = [np.float32(v[0]) if v.shape[0] else np.float32(0.0) for v in vecs]
        qio, qie, tio, tie, tdo, tde, qdo, qde = first
        go_i, ge_i = np.float32(qio + tio), np.float32(qie + tie)
        go_d, ge_d = np.float32(tdo + qdo), np.float32(tde + qde)
        if not (go_i >= ge_i >= 0 and go_d >= ge_d >= 0):
            return None
        return float(go_i), float(ge_i), float(go_d), float(ge_d)

    def scaled(self, factor: float) -> GapCosts:
        """All eight vectors multiplied by ``factor``."""
        return GapCosts(**{f.name: getattr(self, f.name) * np.float32(factor) for f in fields(self)})
