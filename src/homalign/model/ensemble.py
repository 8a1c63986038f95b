"""An ensemble of learned aligners: the mean of their substitution scores and gap costs.

``EnsembleAligner([m1, ..., mK])`` scores a pair with every member and averages S[i, j] and each
position-specific gap-cost vector, then the exact DP runs once on the mean. Averaging scores
(log-potentials) is a product of experts: the ensemble's path distribution is the normalised
geometric mean of the members' (Hinton 2002). On held-out pairs it does as well as averaging the
members' posterior matrices (docs/learned.md) at the cost of one DP instead of K. It helps when
members come from different training trajectories (different initialisations or objectives);
checkpoints of one trajectory are better averaged in weight space (:mod:`homalign.model.average`).

The ensemble has the aligner's inference surface (``embed``, ``score_embedded``, ``score_pair``,
``cfg``): its embedding of a sequence is the members' embeddings concatenated along the last
axis, so a prepared protein (``search``) is embedded once for all members. It is an inference
object: train members one by one (``train_loop``), then join them with

    python -m homalign.model.ensemble OUT STEM [STEM ...]

which writes one safetensors file (member ``k``'s tensors under ``members.k.``) and a JSON whose
``ensemble`` entry lists the member count and where each member came from.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from homalign.dp.soft import SoftGaps
from homalign.model.aligner import AlignerModel


def _mean_scores(outs: list[tuple[Tensor, SoftGaps]]) -> tuple[Tensor, SoftGaps]:
    """The element-wise mean of K members' (S, SoftGaps)."""
    k = len(outs)
    S = sum(o[0] for o in outs) / k
    gaps = SoftGaps(**{f.name: sum(getattr(o[1], f.name) for o in outs) / k
                       for f in fields(SoftGaps)})
    return S, gaps


class EnsembleAligner(nn.Module):
    """K aligners with the same decoding settings whose scores are averaged."""

    def __init__(self, members: list[AlignerModel]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two members, got {len(members)}")
        first = members[0].cfg
        for k, m in enumerate(members[1:], start=1):
            for field in ("decode_mode", "mea_threshold", "template", "matrix"):
                if getattr(m.cfg, field) != getattr(first, field):
                    raise ValueError(f"ensemble member {k} has {field}={getattr(m.cfg, field)!r}, "
                                     f"member 0 has {getattr(first, field)!r}")
        self.members = nn.ModuleList(members)
        self.cfg = first
        self.dims = [m.cfg.dim for m in members]
        # without pair refiners the mean S is one matrix lookup plus one block-diagonal bilinear
        # form over the concatenated embeddings (the same numbers, one lookup instead of K)
        m0 = members[0].scorer.matrix
        self._fused = all(m.scorer.refine is None and torch.equal(m.scorer.matrix, m0)
                          for m in members)

    def _fused_scores(self, cq: Tensor, e_q: Tensor, ct: Tensor, e_t: Tensor,
                      prof: Tensor | None) -> tuple[Tensor, SoftGaps]:
        """The members' mean (S, SoftGaps) computed at once (members without refiners)."""
        scorers = [m.scorer for m in self.members]
        k = len(scorers)
        base = scorers[0].base_scores(cq, ct, prof)
        scale = sum(torch.exp(sc.log_scale) for sc in scorers) / k
        W = torch.block_diag(*(sc.bilinear() for sc in scorers)) / k
        S = scale * base + torch.einsum("bid,de,bje->bij", e_q, W, e_t)
        vec: dict[str, Tensor] = {}
        for sc, a, b in zip(scorers, self._split(e_q), self._split(e_t), strict=True):
            for name, v in zip(("q_ins_open", "q_ins_ext", "t_del_open", "t_del_ext"),
                               (*sc.gap_costs(a), *sc.gap_costs(b)), strict=True):
                vec[name] = vec[name] + v / k if name in vec else v / k
        return S, SoftGaps.from_vectors(S.shape[0], S.shape[1], S.shape[2], dtype=S.dtype, **vec)

    def _split(self, e: Tensor) -> list[Tensor]:
        if e.shape[-1] != sum(self.dims):
            raise ValueError(f"ensemble embedding has width {e.shape[-1]}, expected "
                             f"{sum(self.dims)} (the members' {self.dims} concatenated)")
        return list(torch.split(e, self.dims, dim=-1))

    def forward(self, codes_q: Tensor, codes_t: Tensor, tokens_t: Tensor | None = None
                ) -> tuple[Tensor, SoftGaps, Tensor, Tensor]:
        """Padded batches, as ``AlignerModel.forward``: (mean S, mean gap costs, e_q, e_t) with
        the members' embeddings concatenated."""
        outs = [m(codes_q, codes_t, tokens_t) for m in self.members]
        S, gaps = _mean_scores([(o[0], o[1]) for o in outs])
        return (S, gaps, torch.cat([o[2] for o in outs], dim=-1),
                torch.cat([o[3] for o in outs], dim=-1))

    @torch.no_grad()
    def embed(self, codes: np.ndarray, tokens: np.ndarray | None = None) -> Tensor:
        """(1, L, sum of member dims): the members' embeddings side by side."""
        return torch.cat([m.embed(codes, tokens) for m in self.members], dim=-1)

    @torch.no_grad()
    def score_embedded(self, codes_q: np.ndarray, e_q: Tensor, codes_t: np.ndarray, e_t: Tensor,
                       profile_q: np.ndarray | None = None):
        """(S float32 (Lq, Lt), GapCosts): the members' mean S and mean gap-cost vectors (averaged
        in torch, converted once)."""
        from homalign.dp import GapCosts

        cq = torch.as_tensor(codes_q.astype(np.int64))[None]
        ct = torch.as_tensor(codes_t.astype(np.int64))[None]
        prof = None if profile_q is None else torch.as_tensor(profile_q, dtype=torch.float32)[None]
        if self._fused:
            S, gaps = self._fused_scores(cq, e_q, ct, e_t, prof)
        else:
            S, gaps = _mean_scores([m.scorer(cq, a, ct, b, prof) for m, a, b in
                                    zip(self.members, self._split(e_q), self._split(e_t),
                                        strict=True)])
        lq, lt = len(codes_q), len(codes_t)
        S_np = np.ascontiguousarray(S[0].numpy(), dtype=np.float32)
        return S_np, GapCosts(**gaps.to_numpy(0, lq, lt))

    # the same composition as a single aligner's (embed both, then score)
    score_pair = AlignerModel.score_pair
    n_parameters = AlignerModel.n_parameters


def join_models(stems: list[str | Path]) -> tuple[EnsembleAligner, dict]:
    """The ensemble of the models saved at ``stems`` and the metadata to save it with."""
    from homalign.model.weights import load_model

    loaded = [load_model(s) for s in stems]
    for stem, (_, meta) in zip(stems, loaded, strict=True):
        if meta.get("ensemble"):
            raise ValueError(f"{stem} is already an ensemble; list its members instead")
    ens = EnsembleAligner([m for m, _ in loaded])
    members = [{"stem": str(s), "config": meta["config"],
                **({"averaged": meta["averaged"]} if "averaged" in meta else {})}
               for s, (_, meta) in zip(stems, loaded, strict=True)]
    return ens, {"ensemble": {"members": members}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Join saved aligners into one ensemble model.")
    ap.add_argument("out", type=Path, help="output stem")
    ap.add_argument("stems", nargs="+", help="member models (two or more)")
    args = ap.parse_args(argv)
    from homalign.model.weights import save_model

    ens, meta = join_models(args.stems)
    save_model(ens, args.out, meta)
    print(f"joined {len(args.stems)} models ({ens.n_parameters()} parameters) into "
          f"{args.out}.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["EnsembleAligner", "join_models", "main"]
