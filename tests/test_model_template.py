"""Template mode: the target's known structure as model input (parsing, the encoder, the method)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from homalign.errors import InputError
from homalign.evaluate import bundled_homstrad_dev
from homalign.model.aligner import AlignerModel
from homalign.model.config import AlignerConfig
from homalign.model.encoder import PAD
from homalign.model.encoder_kernel import template_tokens
from homalign.model.template import parse_template, read_template_annotations


def _seq(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, n).astype(np.uint8)


def test_parse_template_maps_dssp_and_joy_letters() -> None:
    tok = parse_template(6, "HGEBC-", "TFteb?")
    ss = tok // 3 - 1
    acc = tok % 3 - 1
    assert ss.tolist() == [0, 0, 1, 1, 2, 2]
    assert acc.tolist() == [0, 1, 0, 0, 1, -1]
    no_acc = parse_template(3, "HE?")
    assert (no_acc % 3 - 1).tolist() == [-1, -1, -1]
    assert no_acc[2] == 0  # nothing known at all: token 0


def test_parse_template_errors_name_record_and_column() -> None:
    with pytest.raises(InputError, match="d1abc.*4 letters for 5 residues"):
        parse_template(5, "HHHH", record="d1abc")
    with pytest.raises(InputError, match="position 3"):
        parse_template(4, "HH*H", record="x")
    with pytest.raises(InputError, match="accessibility letter 'Q'"):
        parse_template(2, "HH", "TQ", record="x")
    for bad in "ZQ1":  # neither DSSP's nor JOY's
        with pytest.raises(InputError, match=f"secondary structure letter '{bad}'"):
            parse_template(3, f"H{bad}E", record="x")


def test_tem_annotations_are_ungapped_and_match_the_sequences() -> None:
    from homalign.io import read_pir

    fam = bundled_homstrad_dev() / "ALAD"
    notes = read_template_annotations(str(fam / "ALAD.tem"))
    seqs = {e.id: e.sequence for e in read_pir(fam / "ALAD.ali")}
    assert set(seqs) <= set(notes)
    for rid, seq in seqs.items():
        ss, acc = notes[rid]
        assert len(ss) == len(seq) and acc is not None and len(acc) == len(seq)
        tok = parse_template(len(seq), ss, acc, record=rid)
        assert (tok // 3 - 1 >= 0).mean() > 0.9  # nearly every residue has a known state


def test_template_encoder_starts_as_the_sequence_encoder_and_token0_adds_nothing() -> None:
    torch.manual_seed(0)
    seq_model = AlignerModel(AlignerConfig()).eval()
    with torch.no_grad():  # a trained-looking bilinear term, so embeddings reach S
        seq_model.scorer.W.normal_(0.0, 0.3)
    tmpl_model = AlignerModel(AlignerConfig(template=True)).eval()
    missing, unexpected = tmpl_model.load_state_dict(seq_model.state_dict(), strict=False)
    assert missing == ["encoder.template.weight"] and unexpected == []
    q, t = _seq(20, 1), _seq(25, 2)
    tok = parse_template(25, "HHHHHEEEEECCCCCHHHHHEEEEE", "TF" * 12 + "T")
    np.testing.assert_array_equal(tmpl_model.embed(t, tok).numpy(), seq_model.embed(t).numpy())
    with torch.no_grad():
        tmpl_model.encoder.template.weight[1:].normal_()
    assert not np.allclose(tmpl_model.embed(t, tok).numpy(), seq_model.embed(t).numpy())
    zeros = np.zeros(25, dtype=np.int64)
    np.testing.assert_array_equal(tmpl_model.embed(t, zeros).numpy(), seq_model.embed(t).numpy())
    S1, _ = tmpl_model.score_pair(q, t, tok)
    S0, _ = seq_model.score_pair(q, t)
    assert not np.allclose(S1, S0)
    with pytest.raises(ValueError, match="template=True"):
        seq_model.embed(t, tok)


def test_template_tokens_are_exact_under_padding() -> None:
    torch.manual_seed(1)
    model = AlignerModel(AlignerConfig(template=True)).eval()
    with torch.no_grad():
        model.encoder.template.weight[1:].normal_()
    a, b = _seq(12, 3), _seq(7, 4)
    ta = parse_template(12, "HHHHEEEECCCC", "TTFFTTFFTTFF")
    tb = parse_template(7, "EEEHHHC", "FFFTTTF")
    codes = torch.full((2, 12), PAD, dtype=torch.int64)
    codes[0], codes[1, :7] = torch.as_tensor(a, dtype=torch.int64), torch.as_tensor(b, dtype=torch.int64)
    ss = torch.full((2, 12), -1)
    acc = torch.full((2, 12), -1)
    tok = template_tokens(ss, acc)
    tok[0], tok[1, :7] = torch.as_tensor(ta), torch.as_tensor(tb)
    with torch.no_grad():
        batch = model.encoder(codes, tok)
    np.testing.assert_allclose(batch[1, :7].numpy(), model.embed(b, tb)[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(batch[0].numpy(), model.embed(a, ta)[0].numpy(), atol=1e-6)


def _alad():
    from homalign.io import read_pir

    fam = bundled_homstrad_dev() / "ALAD"
    entries = read_pir(fam / "ALAD.ali")
    return fam / "ALAD.tem", entries[0], entries[1]


def test_learned_template_mode_through_the_api() -> None:
    import homalign
    from homalign.sequence import Sequence

    tem, a, b = _alad()
    ss, acc = read_template_annotations(str(tem))[b.id]
    q, t = Sequence(a.id, a.sequence), Sequence(b.id, b.sequence)
    plain = homalign.align(q, t, method="learned")
    tmpl = homalign.align(q, t, method="learned", target_ss=ss, target_acc=acc)
    assert tmpl.extra["template"] is True and "template" not in plain.extra
    assert len(tmpl.pairs) > 0.5 * min(len(q), len(t))
    assert not np.array_equal(tmpl.pairs, plain.pairs) or tmpl.score != plain.score
    # the homology probability is the ranking weights' (sequence only), the same in both modes
    assert tmpl.extra["homology_probability"] == plain.extra["homology_probability"] > 0.5
    with pytest.raises(ValueError, match="target_acc needs target_ss"):
        homalign.align(q, t, method="learned", target_acc=acc)
    with pytest.raises(InputError, match=f"{b.id}.*letters for {len(t)} residues"):
        homalign.align(q, t, method="learned", target_ss=ss[:-1])


def test_cli_template_option(tmp_path, capsys) -> None:
    from homalign.cli import main

    tem, a, b = _alad()
    qf, tf = tmp_path / "q.fa", tmp_path / "t.fa"
    qf.write_text(f">{a.id}\n{a.sequence}\n")
    tf.write_text(f">{b.id}\n{b.sequence}\n")
    assert main(["align", str(qf), str(tf), "--template", str(tem), "--format", "tab"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].split("\t")[:2] == [a.id, b.id]
    other = tmp_path / "other.fa"
    other.write_text(">not_in_tem\nMKTAYIAKQR\n")
    assert main(["align", str(qf), str(other), "--template", str(tem)]) == 2
    err = capsys.readouterr().err
    assert "ALAD.tem" in err and "not_in_tem" in err
    assert main(["align", str(qf), str(tf), "--template", str(tem), "--method", "sw"]) == 2
    assert "--method learned only" in capsys.readouterr().err
    rotated = tmp_path / "rotated.fa"  # the target's id, another sequence: not annotated
    seq = b.sequence.replace("-", "")
    rotated.write_text(f">{b.id}\n{seq[10:] + seq[:10]}\n")
    assert main(["align", str(qf), str(rotated), "--template", str(tem)]) == 2
    assert "the .tem record's sequence" in capsys.readouterr().err


def test_training_feeds_the_targets_annotations_to_a_template_model() -> None:
    from homalign.model.data import TrainPair, batches
    from homalign.model.task import batch_loss

    rng = np.random.default_rng(0)
    pairs = []
    for k in range(4):
        a = _seq(20, 10 + k)
        ss = rng.integers(0, 3, 20)
        acc = np.full(20, -1, dtype=np.int64)
        diag = np.stack([np.arange(20), np.arange(20)], axis=1).astype(np.int32)
        pairs.append(TrainPair(f"p{k}", "g", "toy", a, a.copy(), diag, acc, ss, acc, acc))
    torch.manual_seed(0)
    model = AlignerModel(AlignerConfig(dim=8, dilations=(1,), dropout=0.0, template=True))
    with torch.no_grad():  # as after some training: S depends on the embeddings
        model.scorer.W.normal_(0.0, 0.3)
    batch = next(batches(pairs, 64, 10**6, rng, shuffle=False))
    loss, _ = batch_loss(model, batch, aux_weight=0.0)
    loss.backward()
    grad = model.encoder.template.weight.grad
    used = sorted(set(template_tokens(torch.as_tensor(np.stack([p.t_ss for p in pairs])),
                                      torch.full((4, 20), -1)).flatten().tolist()))
    assert used == [3, 6, 9]  # helix / strand / other with unknown accessibility
    assert all(float(grad[k].abs().sum()) > 0 for k in used)
    assert float(grad[0].abs().sum()) == 0.0  # token 0 is padding: never learns
