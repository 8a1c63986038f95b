"""The aligner's closed-form inference scores (homalign.model.inference) against the torch
scorer that training runs, for one aligner and a fused ensemble."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from homalign.model import AlignerConfig, AlignerModel
from homalign.model.aligner import EnsembleAligner, _mean_scores

GAP_FIELDS = ("q_ins_open", "q_ins_ext", "t_ins_open", "t_ins_ext",
              "t_del_open", "t_del_ext", "q_del_open", "q_del_ext")


def _model(seed: int, dim: int = 8) -> AlignerModel:
    torch.manual_seed(seed)
    m = AlignerModel(AlignerConfig(dim=dim, dilations=(1, 2)))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def _codes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, n).astype(np.int8)


def _torch_pair(model, q: np.ndarray, t: np.ndarray):
    """(S, SoftGaps) of the torch scorers (the training path) for one pair."""
    cq = torch.as_tensor(q.astype(np.int64))[None]
    ct = torch.as_tensor(t.astype(np.int64))[None]
    members = model.members if isinstance(model, EnsembleAligner) else [model]
    with torch.no_grad():
        outs = [m.scorer(cq, m.encoder(cq), ct, m.encoder(ct)) for m in members]
    return _mean_scores(outs)


def _check(model, q, targets) -> None:
    e_q = model.embed(q)
    embs = model.embed_many(targets)
    got = model.score_many(q, e_q, targets, embs)
    assert len(got) == len(targets)
    for t, (S, gaps) in zip(targets, got, strict=True):
        S_ref, g_ref = _torch_pair(model, q, t)
        assert S.dtype == np.float32 and S.shape == (len(q), len(t))
        np.testing.assert_allclose(S, S_ref[0].numpy(), rtol=1e-5, atol=1e-5)
        ref = g_ref.to_numpy(0, len(q), len(t))
        for name in GAP_FIELDS:
            np.testing.assert_allclose(getattr(gaps, name), ref[name], rtol=1e-5, atol=1e-6)
        # one pair alone is the same computation (BLAS may round another shape otherwise)
        S1, _ = model.score_embedded(q, e_q, t, model.embed(t))
        np.testing.assert_allclose(S1, S, rtol=1e-5, atol=1e-5)


def test_closed_form_equals_the_torch_scorer_for_one_aligner() -> None:
    _check(_model(0), _codes(23, 1), [_codes(31, 2), _codes(1, 3), _codes(57, 4)])


def test_closed_form_equals_the_members_mean_for_an_ensemble() -> None:
    ens = EnsembleAligner([_model(1, 8), _model(2, 6), _model(3, 8)])
    assert ens.closed_form() is not None
    _check(ens, _codes(19, 5), [_codes(40, 6), _codes(2, 7)])


def test_closed_form_follows_weight_changes() -> None:
    """Training changes the weights between evaluations: the form is read from them each time."""
    model = _model(5)
    q, t = _codes(10, 11), _codes(12, 12)
    before, _ = model.score_pair(q, t)
    with torch.no_grad():
        model.scorer.W.add_(0.5)
    after, _ = model.score_pair(q, t)
    assert not np.allclose(before, after)
    _check(model, q, [t])


def test_a_pair_refiner_falls_back_to_the_torch_scorer() -> None:
    torch.manual_seed(6)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=4, pair_rank=2)).eval()
    assert model.closed_form() is None
    _check(model, _codes(9, 13), [_codes(11, 14)])


def test_an_ensemble_of_refiner_members_falls_back_to_their_torch_scorers() -> None:
    members = []
    for seed in (7, 8):
        torch.manual_seed(seed)
        members.append(AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=4,
                                                  pair_rank=2)).eval())
    ens = EnsembleAligner(members)
    assert ens.closed_form() is None
    _check(ens, _codes(9, 15), [_codes(11, 16), _codes(4, 17)])


def _saved_arrays(model, tmp_path, extra: dict | None = None):
    """(arrays, metadata) of ``model`` as saved and read back without torch."""
    import json

    from safetensors.numpy import load_file

    from homalign.model import save_model

    save_model(model, tmp_path / "m", extra)
    return (load_file(str(tmp_path / "m.safetensors")),
            json.loads((tmp_path / "m.json").read_text()))


def test_inference_aligner_is_the_torch_model_without_torch(tmp_path) -> None:
    """Built from the saved arrays, the torch-free aligner gives the eval-mode torch model's
    embeddings, scores and gap costs bit for bit (one code path: the encoder kernel and the
    closed form), for one aligner and for an ensemble; its homology scores equal the torch
    adapter's to float32 rounding."""
    from homalign.model.inference import InferenceAligner

    q, targets = _codes(40, 5), [_codes(33, 6), _codes(1, 7), _codes(120, 8)]
    one = _model(6)
    with torch.no_grad():
        one.homology.W.normal_(0.0, 0.2)
    ens = EnsembleAligner([_model(7, 8), _model(8, 6)]).eval()
    ens_meta = {"ensemble": {"members": [{"config": m.cfg.to_dict()} for m in ens.members]}}
    for model, sub, extra in ((one, "one", None), (ens, "ens", ens_meta)):
        (tmp_path / sub).mkdir()
        state, meta = _saved_arrays(model, tmp_path / sub, extra)
        if extra:
            meta = {**meta, **extra}
        twin = InferenceAligner.from_state(state, meta)
        e_q = twin.embed(q)
        assert isinstance(e_q, np.ndarray)
        np.testing.assert_array_equal(e_q, model.embed(q).numpy())
        for a, b in zip(twin.embed_many(targets), model.embed_many(targets), strict=True):
            np.testing.assert_array_equal(a, b.numpy())
        got = twin.score_many(q, e_q, targets, twin.embed_many(targets))
        want = model.score_many(q, model.embed(q), targets, model.embed_many(targets))
        for (S, g), (S2, g2) in zip(got, want, strict=True):
            np.testing.assert_array_equal(S, S2)
            for name in GAP_FIELDS:
                np.testing.assert_array_equal(getattr(g, name), getattr(g2, name))
    state, meta = _saved_arrays(one, tmp_path / "one")
    twin = InferenceAligner.from_state(state, meta)
    t = targets[2]
    S_h, _ = twin.homology_embedded(q, twin.embed(q), t, twin.embed(t))
    ref, _ = one.homology_embedded(q, one.embed(q), t, one.embed(t))
    np.testing.assert_allclose(S_h, ref, rtol=1e-6, atol=1e-6)


def test_inference_aligner_reads_template_tokens(tmp_path) -> None:
    torch.manual_seed(10)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1, 2), template=True)).eval()
    with torch.no_grad():
        model.encoder.template.weight.normal_(0.0, 0.5)
    from homalign.model.inference import InferenceAligner

    state, meta = _saved_arrays(model, tmp_path)
    twin = InferenceAligner.from_state(state, meta)
    codes, tokens = _codes(30, 11), np.random.default_rng(12).integers(0, 12, 30)
    np.testing.assert_array_equal(twin.embed(codes, tokens), model.embed(codes, tokens).numpy())
    assert not np.array_equal(twin.embed(codes, tokens), twin.embed(codes))


def test_inference_aligner_refuses_what_needs_torch(tmp_path) -> None:
    from homalign.model.inference import InferenceAligner

    refined = AlignerModel(AlignerConfig(dim=8, dilations=(1,), pair_channels=2)).eval()
    state, meta = _saved_arrays(refined, tmp_path)
    with pytest.raises(ValueError, match="torch model"):
        InferenceAligner.from_state(state, meta)
    del state["encoder.embed.weight"]
    meta["config"]["pair_channels"] = 0
    with pytest.raises(ValueError, match="encoder.embed.weight"):
        InferenceAligner.from_state(state, meta)


def test_ranking_model_from_arrays_equals_the_torch_model(tmp_path) -> None:
    import hashlib

    from homalign.model.ranking import RankingModel

    model = _model(9)
    with torch.no_grad():
        model.homology.W.normal_(0.0, 0.2)
        model.homology.shift.fill_(0.4)
    state, meta = _saved_arrays(model, tmp_path)
    raw = (tmp_path / "m.safetensors").read_bytes()
    a = RankingModel.from_state(state, meta, raw)
    assert a.shift == np.float32(0.4)
    assert a.fingerprint == hashlib.sha256(raw).hexdigest()[:16]
    with torch.no_grad():  # the adapter's closed form, as torch computes it
        W = (model.scorer.bilinear() + 0.5 * (model.homology.W + model.homology.W.T)).numpy()
        matrix = (torch.exp(model.scorer.log_scale) * model.scorer.matrix).numpy()
    np.testing.assert_array_equal(a.W, W)
    np.testing.assert_allclose(a.matrix, matrix, rtol=2e-7, atol=0)


def test_float16_embeddings_convert_exactly() -> None:
    """Every half-precision value, subnormals, infinities and NaNs included, converts as numpy
    converts it."""
    from homalign.model.ranking import _as_float32

    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    got = _as_float32(h)
    want = h.astype(np.float32)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_learned_align_and_search_run_without_torch(tmp_path) -> None:
    """The learned aligner (template mode included) and search never import torch (start-up)."""
    import subprocess
    import sys

    fasta = tmp_path / "db.fa"
    fasta.write_text(">a\nMKVLAAGIVGLLLAVSAHAATEEKKEVVLAGHEAGAWGHEE\n"
                     ">b\nMKVLSAGIVGLLLAVSAHAATEEKREVVLAGHEAGAWGHEE\n>c\nPAWHEAEKLMNQRSTVWY\n")
    code = ("import sys, homalign\n"
            "a = homalign.align('HEAGAWGHEEKLMN', 'PAWHEAEKLMN')\n"
            "assert 'homology_probability' in a.extra\n"
            f"hits = homalign.search('MKVLAAGIVGLLLAVSAHAATEEKKEVVLAG', {str(fasta)!r}, "
            "method='learned', evalue=1e9)\n"
            "assert hits and hits[0].alignment is not None\n"
            "from homalign import examples\n"
            "from homalign.cli import main\n"
            "main(['align', str(examples.path('query.fa')), str(examples.path('template.fa')),\n"
            "      '--template', str(examples.path('template.tem')), '-o', '/dev/null'])\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
