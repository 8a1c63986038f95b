"""The residue encoder's forward pass for inference, without torch: numba loops around one BLAS
product a block.

:class:`homalign.model.encoder.ResidueEncoder` in eval mode (dropout off) computes, for a row of
residue codes (``PAD`` between and around sequences)::

    x = embed[codes] * mask                                  (+ template[tokens] before the mask)
    for each block:  h = LayerNorm(x) * mask
                     y = bias + sum_k h[i + (k - (K-1)/2) d] W_k     (dilated conv, zeros outside)
                     x = (x + gelu(y)) * mask
    out = LayerNorm(x) * mask

The convolution of a block is one product ``Z = h [W_0 ... W_{K-1}]`` ((n, dim) by (dim, K dim),
numpy's BLAS on one thread) followed by a shifted sum of ``Z``'s column blocks; the layer norms,
the shifted sum, GELU, the residual and the masks are numba loops. Torch spends most of a small
encoder's time between its kernels (a LayerNorm, a transposed copy, a conv, a GELU, two masks
per block); here a block is three passes over the row.

GELU is exact GELU, ``x/2 (1 + erf(x / sqrt 2))``, with erf by the odd/even rational polynomial
on [-4, 4] that Eigen and XLA use for float32 (beyond 4, erf is 1 in float32): within 2e-6 of
the float64 value over the line. The results equal torch's to float32 rounding (~2e-6 on the
shipped weights; tests: 1e-5), not bit for bit: a sum's order differs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from homalign.alphabet import N_CODES
from homalign.threads import get_threads, one_blas_thread

__all__ = ["EMBED_BATCH_RESIDUES", "LAYER_NORM_EPS", "N_TEMPLATE", "PAD", "EncoderKernel", "gelu",
           "pack_rows", "template_tokens"]

PAD = N_CODES
"""Code used to pad rows and batches (one past the alphabet; the encoder's ``PAD``)."""

N_TEMPLATE = 12
"""Template tokens: ``(ss + 1) * 3 + (acc + 1)`` for ss in {-1 unknown, 0 helix, 1 strand, 2 other}
and acc in {-1 unknown, 0 exposed, 1 buried}; token 0 (nothing known) adds nothing."""


def template_tokens(ss: Any, acc: Any) -> Any:
    """Template tokens from per-residue class labels (-1 = unknown, as in the training batches):
    numpy arrays or torch tensors (both have ``clip``)."""
    return (ss.clip(-1, 2) + 1) * 3 + (acc.clip(-1, 1) + 1)

#: residues per encoder call when embedding many sequences (one packed row, about 2 MB of
#: activations per layer at dim 32)
EMBED_BATCH_RESIDUES = 16_384

LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default, which the encoder uses


def pack_rows(codes: list[np.ndarray], gap: int, residues: int = EMBED_BATCH_RESIDUES
              ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(indices, start of each in the row, int64 codes (N,)) rows of whole sequences placed
    back to back with ``gap`` ``PAD`` codes between them, at most ``residues`` codes a row (a
    longer sequence alone), covering every sequence once, in input order.

    With ``gap`` at least the widest convolution's reach, a sequence in the row is embedded as
    if alone (the encoder zeroes ``PAD`` positions after every layer, as its own zero padding
    would be), and one encoder call does the whole row: no padding to the longest sequence,
    no per-sequence call."""
    start = 0
    while start < len(codes):
        stop, n = start + 1, len(codes[start])
        while stop < len(codes) and n + gap + len(codes[stop]) <= residues:
            n += gap + len(codes[stop])
            stop += 1
        row = np.full(n, PAD, dtype=np.int64)
        starts = np.empty(stop - start, dtype=np.int64)
        pos = 0
        for r, k in enumerate(range(start, stop)):
            starts[r] = pos
            row[pos:pos + len(codes[k])] = codes[k]
            pos += len(codes[k]) + gap
        yield np.arange(start, stop), starts, row
        start = stop


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, mask: np.ndarray,
                out: np.ndarray) -> None:
    """``out = LayerNorm(x) * mask`` row by row (biased variance, as torch; the sums over a row
    are vectorised, ``reassoc``, and depend on that row alone)."""
    n, d = x.shape
    inv_d = np.float32(1.0) / np.float32(d)
    e = np.float32(eps)
    for i in range(n):
        s = np.float32(0.0)
        for c in range(d):
            s += x[i, c]
        mu = s * inv_d
        v = np.float32(0.0)
        for c in range(d):
            t = x[i, c] - mu
            v += t * t
        r = np.float32(1.0) / np.sqrt(v * inv_d + e)
        m = mask[i]
        for c in range(d):
            out[i, c] = ((x[i, c] - mu) * r * w[c] + b[c]) * m


@njit(cache=True, boundscheck=False, error_model="numpy", inline="always")
def _gelu(v: np.float32) -> np.float32:
    t = v * np.float32(0.70710678118654752)
    t = min(max(t, np.float32(-4.0)), np.float32(4.0))
    t2 = t * t
    p = np.float32(-2.72614225801306e-10)
    p = p * t2 + np.float32(2.77068142495902e-08)
    p = p * t2 + np.float32(-2.10102402082508e-06)
    p = p * t2 + np.float32(-5.69250639462346e-05)
    p = p * t2 + np.float32(-7.34990630326855e-04)
    p = p * t2 + np.float32(-2.95459980854025e-03)
    p = p * t2 + np.float32(-1.60960333262415e-02)
    q = np.float32(-1.45660718464996e-05)
    q = q * t2 + np.float32(-2.13374055278905e-04)
    q = q * t2 + np.float32(-1.68282697438203e-03)
    q = q * t2 + np.float32(-7.37332916720468e-03)
    q = q * t2 + np.float32(-1.42647390514189e-02)
    return np.float32(0.5) * v * (np.float32(1.0) + p * t / q)


@njit(cache=True, boundscheck=False, error_model="numpy")
def _gelu_array(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[i] = _gelu(x[i])


def gelu(x: np.ndarray) -> np.ndarray:
    """float32 GELU of a 1-D array, as the kernel computes it (exposed for tests)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    _gelu_array(x, out)
    return out


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _conv_gelu(Z: np.ndarray, bias: np.ndarray, dilation: int, x: np.ndarray, mask: np.ndarray,
               out: np.ndarray) -> None:
    """``out = (x + gelu(bias + sum_k Z[i + (k - half) d, k-th block])) * mask``."""
    n, d = x.shape
    K = Z.shape[1] // d
    half = (K - 1) // 2
    for i in range(n):
        for o in range(d):
            out[i, o] = bias[o]
        for k in range(K):
            j = i + (k - half) * dilation
            if j >= 0 and j < n:
                for o in range(d):
                    out[i, o] += Z[j, k * d + o]
        m = mask[i]
        for o in range(d):
            out[i, o] = (x[i, o] + _gelu(out[i, o])) * m


@dataclass(frozen=True)
class EncoderKernel:
    """The weights of one eval-mode :class:`~homalign.model.encoder.ResidueEncoder`, laid out
    for :meth:`__call__`."""

    embed: np.ndarray  # (codes + 1, dim); the PAD row is zero
    template: np.ndarray | None  # (template tokens, dim) or None
    norm_w: np.ndarray  # (blocks, dim)
    norm_b: np.ndarray
    norm_eps: tuple[float, ...]
    conv_w: np.ndarray  # (blocks, dim, K dim): conv_w[b, c, k dim + o] = weight[o, c, k]
    conv_b: np.ndarray  # (blocks, dim)
    dilation: tuple[int, ...]
    final_w: np.ndarray  # (dim,)
    final_b: np.ndarray
    final_eps: float
    pad: int

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], dilations: tuple[int, ...],
                   prefix: str = "encoder.", eps: float = LAYER_NORM_EPS) -> EncoderKernel:
        """From the arrays of a saved model's state (``prefix``: the encoder's keys, e.g.
        ``members.0.encoder.``) and its config's ``dilations``; no torch."""

        def get(name: str) -> np.ndarray:
            key = prefix + name
            if key not in state:
                raise ValueError(f"weights hold no {key}")
            return np.ascontiguousarray(state[key], dtype=np.float32)

        embed = get("embed.weight")
        dim = embed.shape[1]
        convs = [get(f"blocks.{b}.conv.weight") for b in range(len(dilations))]
        for w in convs:
            if w.shape[:2] != (dim, dim) or w.shape[2] % 2 == 0:
                raise ValueError(f"the encoder kernel needs odd-width ({dim}, {dim}, K) "
                                 f"convolutions, got {w.shape}")

        def stack(arrays: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
            return (np.ascontiguousarray(np.stack(arrays)) if arrays
                    else np.zeros((0, *shape), dtype=np.float32))

        n = len(dilations)
        return cls(
            embed=embed,
            template=get("template.weight") if prefix + "template.weight" in state else None,
            norm_w=stack([get(f"blocks.{b}.norm.weight") for b in range(n)], (dim,)),
            norm_b=stack([get(f"blocks.{b}.norm.bias") for b in range(n)], (dim,)),
            norm_eps=(float(eps),) * n,
            # (out, in, K) -> (in, K out): one product gives every tap's contribution
            conv_w=stack([w.transpose(1, 2, 0).reshape(dim, -1) for w in convs], (dim, dim)),
            conv_b=stack([get(f"blocks.{b}.conv.bias") for b in range(n)], (dim,)),
            dilation=tuple(int(d) for d in dilations),
            final_w=get("norm.weight"), final_b=get("norm.bias"), final_eps=float(eps),
            pad=PAD)

    @classmethod
    def from_encoder(cls, encoder) -> EncoderKernel:  # noqa: ANN001
        """The kernel form of a :class:`~homalign.model.encoder.ResidueEncoder`'s current
        weights."""
        blocks = list(encoder.blocks)
        for b in blocks:
            if b.conv.kernel_size[0] % 2 == 0 or b.conv.stride[0] != 1 or b.conv.groups != 1:
                raise ValueError("the encoder kernel needs odd-width, stride-1, ungrouped "
                                 f"convolutions, got {b.conv}")
        eps = {float(b.norm.eps) for b in blocks} | {float(encoder.norm.eps)}
        if len(eps) != 1:
            raise ValueError(f"the encoder kernel needs one LayerNorm eps, got {sorted(eps)}")
        state = {k: v.detach().cpu().numpy() for k, v in encoder.state_dict().items()}
        return cls.from_state(state, tuple(int(b.conv.dilation[0]) for b in blocks), prefix="",
                              eps=eps.pop())

    @property
    def dim(self) -> int:
        return int(self.embed.shape[1])

    @property
    def reach(self) -> int:
        """Positions either side that one convolution reads (the widest block's)."""
        k = self.conv_w.shape[2] // self.dim if len(self.conv_w) else 1
        return max((d * (k - 1) // 2 for d in self.dilation), default=0)

    def embed_many(self, codes: list[np.ndarray], threads: int | None = None
                   ) -> list[np.ndarray]:
        """float32 (L, dim) embeddings of each sequence, computed in packed rows
        (:func:`pack_rows`), as views of the rows; the rows on ``threads`` threads (None:
        :func:`homalign.threads.get_threads`). A row's numbers do not depend on the thread
        count: each row is one thread's, with BLAS on one thread."""
        out: list[np.ndarray] = [np.empty((0, self.dim), dtype=np.float32)] * len(codes)
        rows = list(pack_rows(codes, self.reach))
        n = min(len(rows), get_threads() if threads is None else int(threads))
        if n > 1:
            from concurrent.futures import ThreadPoolExecutor

            with one_blas_thread(), ThreadPoolExecutor(n) as pool:  # the kernels drop the GIL
                embedded = list(pool.map(self, [row for _, _, row in rows]))
        else:
            embedded = [self(row) for _, _, row in rows]
        for (idx, starts, _), e in zip(rows, embedded, strict=True):
            for k, s in zip(idx.tolist(), starts.tolist(), strict=True):
                out[k] = e[s:s + len(codes[k])]
        return out

    def __call__(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> np.ndarray:
        """float32 (n, dim) embeddings of a row of codes (``PAD`` between sequences);
        ``tokens``: template tokens of the row (template encoders)."""
        codes = np.asarray(codes, dtype=np.int64)
        if codes.ndim != 1:
            raise ValueError(f"codes must be one row, got shape {codes.shape}")
        mask = (codes != self.pad).astype(np.float32)
        x = self.embed[codes]
        if tokens is not None:
            if self.template is None:
                raise ValueError("this encoder was built without template=True")
            x = x + self.template[np.asarray(tokens, dtype=np.int64)]
        x = np.ascontiguousarray(x * mask[:, None], dtype=np.float32)
        h = np.empty_like(x)
        nxt = np.empty_like(x)
        with one_blas_thread():  # the same rounding at any thread count
            for b, dil in enumerate(self.dilation):
                _layer_norm(x, self.norm_w[b], self.norm_b[b], self.norm_eps[b], mask, h)
                _conv_gelu(h @ self.conv_w[b], self.conv_b[b], dil, x, mask, nxt)
                x, nxt = nxt, x
        out = np.empty_like(x)
        _layer_norm(x, self.final_w, self.final_b, self.final_eps, mask, out)
        return out
