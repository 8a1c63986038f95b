"""The checkpoint store: atomic commits, the hand-editable metadata file, hashes, safe loading."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from homalign.train import checkpoint, codec
from homalign.train.checkpoint import (
    CheckpointMetadata,
    CheckpointStore,
    CorruptCheckpointError,
    latest_checkpoint,
)


def _save(store: CheckpointStore, step: int) -> None:
    store.save(step, {"w": torch.full((3,), float(step))}, {"global_step": step})


def _w(store: CheckpointStore) -> float:
    ckpt = store.load_latest()
    assert ckpt is not None
    return float(ckpt.tensors["w"][0])


def test_save_commits_and_prunes(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep_max=2)
    for step in (10, 20, 30):
        _save(store, step)
    meta = CheckpointMetadata.parse((tmp_path / "checkpoint").read_text())
    assert meta.model_checkpoint_path == "model.ckpt-30"
    assert meta.all_model_checkpoint_paths == ["model.ckpt-20", "model.ckpt-30"]
    assert not list(tmp_path.glob("model.ckpt-10*")), "pruned checkpoint files remain"
    assert [c.step for c in store.on_disk()] == [20, 30]
    ckpt = store.load_latest()
    assert ckpt is not None and ckpt.info.step == 30 and ckpt.state == {"global_step": 30}
    manifest = json.loads((tmp_path / "model.ckpt-30.index.json").read_text())
    assert manifest["content_sha256"] == ckpt.content_hash
    assert latest_checkpoint(tmp_path).step == 30  # type: ignore[union-attr]


def test_hand_edited_metadata_selects_another_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    for step in (1, 2, 3):
        _save(store, step)
    path = tmp_path / "checkpoint"
    path.write_text(path.read_text().replace('model_checkpoint_path: "model.ckpt-3"',
                                             "model_checkpoint_path: model.ckpt-2"))
    assert _w(store) == 2.0
    # an absolute path works too
    path.write_text(f'model_checkpoint_path: "{tmp_path / "model.ckpt-1"}"\n')
    assert _w(store) == 1.0


@pytest.mark.parametrize("damage", ["truncate", "flip", "no_manifest", "no_tensors", "state"])
def test_corrupt_newest_falls_back_to_previous(tmp_path: Path, damage: str) -> None:
    store = CheckpointStore(tmp_path)
    for step in (5, 6):
        _save(store, step)
    tensors = tmp_path / "model.ckpt-6.safetensors"
    if damage == "truncate":
        tensors.write_bytes(tensors.read_bytes()[:-7])
    elif damage == "flip":
        data = bytearray(tensors.read_bytes())
        data[-3] ^= 0xFF
        tensors.write_bytes(bytes(data))
    elif damage == "no_manifest":
        (tmp_path / "model.ckpt-6.index.json").unlink()
    elif damage == "no_tensors":
        tensors.unlink()
    else:
        (tmp_path / "model.ckpt-6.json").write_text('{"global_step": 999}')
    with pytest.raises(CorruptCheckpointError):
        store.load(store.selected())  # type: ignore[arg-type]
    assert _w(store) == 5.0
    assert any("model.ckpt-6" in p for p in store.problems)


def test_fallback_scans_disk_when_metadata_is_gone(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    for step in (7, 8):
        _save(store, step)
    (tmp_path / "checkpoint").unlink()
    assert _w(store) == 8.0
    (tmp_path / "checkpoint").write_text("garbage without a colon\n")
    assert _w(store) == 8.0
    assert any("checkpoint" in p for p in store.problems)


def test_no_checkpoint(tmp_path: Path) -> None:
    assert CheckpointStore(tmp_path / "empty").load_latest() is None


def test_pickle_payload_is_never_loaded(tmp_path: Path) -> None:
    """A pickle disguised as the tensor file, with a matching manifest, is rejected unparsed."""
    store = CheckpointStore(tmp_path)
    _save(store, 1)
    _save(store, 2)
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(3)}, buf)
    evil = buf.getvalue()
    tensors = tmp_path / "model.ckpt-2.safetensors"
    tensors.write_bytes(evil)
    manifest_path = tmp_path / "model.ckpt-2.index.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["files"][tensors.name]
    entry["sha256"], entry["size"] = checkpoint.sha256_bytes(evil), len(evil)
    from homalign.train.checkpoint import content_hash

    manifest["content_sha256"] = content_hash(
        {name: e["sha256"] for name, e in manifest["files"].items()}
    )
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(CorruptCheckpointError, match="unreadable payload"):
        store.load(store.selected())  # type: ignore[arg-type]
    assert _w(store) == 1.0


def test_failed_commit_keeps_previous_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash while writing the metadata leaves the old selection and no torn files."""
    store = CheckpointStore(tmp_path)
    _save(store, 1)
    before = (tmp_path / "checkpoint").read_text()
    real_replace = os.replace

    def crash_on_metadata(src: str, dst: str) -> None:
        if Path(dst).name == "checkpoint":
            raise OSError("simulated crash")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_metadata)
    with pytest.raises(OSError, match="simulated"):
        _save(store, 2)
    monkeypatch.setattr(os, "replace", real_replace)
    assert (tmp_path / "checkpoint").read_text() == before
    assert not list(tmp_path.glob(".*.tmp"))
    assert _w(store) == 1.0


def test_codec_round_trip_is_exact() -> None:
    rng_np = np.random.RandomState(3).get_state()
    tree = {
        "state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2, 2)}, 1: {"n": 4}},
        "groups": [{"betas": (0.9, 0.999), "lr": 0.1, "params": [0, 1], "name": None}],
        "np": rng_np,
        "inf": math.inf,
        "blob": b"\x00\xff",
        "flag": True,
        "__tensor__": "not a marker when other keys exist",
    }
    enc, tensors = codec.encode(tree)
    json.dumps(enc, allow_nan=False)  # plain JSON
    assert set(tensors) == {"state/0/step", "state/0/exp_avg"}
    back = codec.decode(json.loads(json.dumps(enc)), tensors)
    assert back["state"][0]["exp_avg"].equal(torch.ones(2, 2))
    assert back["state"][1] == {"n": 4}
    assert back["groups"][0]["betas"] == (0.9, 0.999)
    assert isinstance(back["groups"][0]["betas"], tuple)
    assert back["np"][0] == "MT19937" and np.array_equal(back["np"][1], rng_np[1])
    assert back["inf"] == math.inf and back["blob"] == b"\x00\xff" and back["flag"] is True
    assert back["__tensor__"] == tree["__tensor__"]


def test_codec_refuses_arbitrary_objects() -> None:
    with pytest.raises(TypeError, match="cannot checkpoint"):
        codec.encode({"fn": lambda: 1})
    with pytest.raises(TypeError, match="object array"):
        codec.encode(np.array([object()]))
