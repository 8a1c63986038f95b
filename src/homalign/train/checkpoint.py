"""The checkpoint store: atomic, hashed, safe-to-load checkpoints and a hand-editable index.

Layout of a logdir (``basename`` defaults to ``model.ckpt``)::

    checkpoint                           text metadata: the selected and all kept checkpoints
    model.ckpt-1200.safetensors          every tensor (model, optimizer, RNG, ...)
    model.ckpt-1200.json                 everything else, as plain JSON (see ``codec``)
    model.ckpt-1200.index.json           manifest: step, size and sha256 of the two files above

A checkpoint is *complete* when its manifest exists and the sizes and hashes it lists match; it is
*committed* when the ``checkpoint`` file names it. :meth:`CheckpointStore.save` writes the three
files atomically (temp file, fsync, rename) in that order, fsyncs the directory, and only then
rewrites ``checkpoint`` atomically, so a kill at any moment leaves the previous committed state.

The ``checkpoint`` file is plain text, one ``key: "value"`` per line::

    model_checkpoint_path: "model.ckpt-1200"
    all_model_checkpoint_paths: "model.ckpt-1000"
    all_model_checkpoint_paths: "model.ckpt-1200"

Editing ``model_checkpoint_path`` by hand selects another checkpoint for the next restore.
Restoring tries the selected checkpoint, then the kept ones older than it (newest first), then any
other complete checkpoint on disk older than it; every corrupt or missing one it passes is reported
(logged and listed in :attr:`CheckpointStore.problems`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import safetensors.torch
import torch

from homalign.errors import HomalignError
from homalign.io.atomic import atomic_write_bytes, fsync_directory
from homalign.io.digest import sha256_bytes
from homalign.train import codec

log = logging.getLogger(__name__)

METADATA_NAME = "checkpoint"
FORMAT = "homalign-checkpoint/1"
_TENSORS_SUFFIX = ".safetensors"
_STATE_SUFFIX = ".json"
_MANIFEST_SUFFIX = ".index.json"
_LINE = re.compile(r'^\s*([A-Za-z_]+)\s*:\s*"?(.*?)"?\s*$')


class CorruptCheckpointError(HomalignError):
    """A checkpoint is missing a file, is truncated, or does not match its content hash."""


@dataclass(frozen=True)
class CheckpointInfo:
    """Where a checkpoint lives: ``prefix`` is the path without suffixes."""

    prefix: Path
    step: int

    @property
    def name(self) -> str:
        """The prefix's file name, as written in the ``checkpoint`` metadata file."""
        return self.prefix.name

    def files(self) -> list[Path]:
        """The three files of the checkpoint (tensors, state, manifest)."""
        return [
            Path(f"{self.prefix}{_TENSORS_SUFFIX}"),
            Path(f"{self.prefix}{_STATE_SUFFIX}"),
            Path(f"{self.prefix}{_MANIFEST_SUFFIX}"),
        ]


@dataclass
class LoadedCheckpoint:
    """A verified checkpoint: its tensors, its JSON state and its content hash."""

    info: CheckpointInfo
    tensors: dict[str, torch.Tensor]
    state: dict[str, Any]
    content_hash: str


@dataclass
class CheckpointMetadata:
    """The parsed ``checkpoint`` file (names relative to the logdir, or absolute paths)."""

    model_checkpoint_path: str | None = None
    all_model_checkpoint_paths: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The file's text."""
        lines = []
        if self.model_checkpoint_path is not None:
            lines.append(f'model_checkpoint_path: "{self.model_checkpoint_path}"')
        lines += [f'all_model_checkpoint_paths: "{p}"' for p in self.all_model_checkpoint_paths]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> CheckpointMetadata:
        """Parse the text format; unknown keys and ``#`` comments are ignored."""
        meta = cls()
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = _LINE.match(line)
            if m is None:
                raise ValueError(f"cannot parse checkpoint metadata line {raw!r}")
            key, value = m.groups()
            if key == "model_checkpoint_path":
                meta.model_checkpoint_path = value
            elif key == "all_model_checkpoint_paths":
                meta.all_model_checkpoint_paths.append(value)
        return meta


def content_hash(file_hashes: Mapping[str, str]) -> str:
    """One sha256 over all files of a checkpoint (file name and hash, in name order)."""
    h = hashlib.sha256()
    for name in sorted(file_hashes):
        h.update(f"{name}\0{file_hashes[name]}\n".encode())
    return h.hexdigest()


class CheckpointStore:
    """Save, list, select and restore checkpoints in one directory.

    Only one process may write a store at a time (in distributed training: rank 0); any number of
    processes may read it.
    """

    def __init__(
        self, directory: str | os.PathLike[str], basename: str = "model.ckpt", keep_max: int = 5
    ) -> None:
        if keep_max < 1:
            raise ValueError("keep_max must be at least 1")
        self.directory = Path(directory)
        self.basename = basename
        self.keep_max = keep_max
        self.problems: list[str] = []
        self._step_re = re.compile(re.escape(basename) + r"-(\d+)" + re.escape(_MANIFEST_SUFFIX))

    # --- names -----------------------------------------------------------------------------
    def info_for_step(self, step: int) -> CheckpointInfo:
        """Where the checkpoint of ``step`` is (or would be) written."""
        return CheckpointInfo(self.directory / f"{self.basename}-{step}", step)

    def _resolve(self, name: str) -> CheckpointInfo:
        prefix = Path(name)
        if not prefix.is_absolute():
            prefix = self.directory / prefix
        m = re.search(r"-(\d+)$", prefix.name)
        step = int(m.group(1)) if m else -1
        return CheckpointInfo(prefix, step)

    @property
    def metadata_path(self) -> Path:
        """The ``checkpoint`` metadata file."""
        return self.directory / METADATA_NAME

    # --- metadata ---------------------------------------------------------------------------
    def read_metadata(self) -> CheckpointMetadata | None:
        """The parsed metadata file, or ``None`` when it is missing or unreadable (reported)."""
        try:
            data = self.metadata_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # a directory, no permission, ...: reported, then fall back
            self._problem(f"{self.metadata_path}: {exc}")
            return None
        try:
            return CheckpointMetadata.parse(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            self._problem(f"{self.metadata_path}: {exc}")
            return None

    def kept(self) -> list[CheckpointInfo]:
        """The checkpoints the metadata file lists, oldest first."""
        meta = self.read_metadata()
        if meta is None:
            return []
        return [self._resolve(p) for p in meta.all_model_checkpoint_paths]

    def selected(self) -> CheckpointInfo | None:
        """The checkpoint the metadata selects (not verified), or ``None``."""
        meta = self.read_metadata()
        if meta is None or meta.model_checkpoint_path is None:
            return None
        return self._resolve(meta.model_checkpoint_path)

    def on_disk(self) -> list[CheckpointInfo]:
        """Checkpoints of this basename that have a manifest on disk, oldest first."""
        if not self.directory.is_dir():
            return []
        found = []
        for p in self.directory.iterdir():
            m = self._step_re.fullmatch(p.name)
            if m:
                found.append(self.info_for_step(int(m.group(1))))
        return sorted(found, key=lambda i: i.step)

    # --- saving -----------------------------------------------------------------------------
    def save(self, step: int, tensors: Mapping[str, torch.Tensor], state: Mapping[str, Any]
             ) -> CheckpointInfo:
        """Write the checkpoint of ``step`` atomically, commit it in the metadata, prune old ones.

        ``tensors`` must be contiguous CPU tensors that share no storage; ``state`` must be plain
        JSON (see :mod:`homalign.train.codec`).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        info = self.info_for_step(step)
        tensor_bytes = safetensors.torch.save(dict(tensors))
        state_bytes = json.dumps(dict(state), sort_keys=True, allow_nan=False).encode()
        tensors_path, state_path, manifest_path = info.files()
        hashes = {}
        for path, data in ((tensors_path, tensor_bytes), (state_path, state_bytes)):
            atomic_write_bytes(path, data, sync_dir=False)
            hashes[path.name] = sha256_bytes(data)
        manifest = {
            "format": FORMAT,
            "step": step,
            "files": {
                tensors_path.name: {"sha256": hashes[tensors_path.name], "size": len(tensor_bytes)},
                state_path.name: {"sha256": hashes[state_path.name], "size": len(state_bytes)},
            },
            "content_sha256": content_hash(hashes),
        }
        atomic_write_bytes(manifest_path, json.dumps(manifest, indent=1).encode(), sync_dir=False)
        fsync_directory(self.directory)
        self._commit(info)
        return info

    def _commit(self, info: CheckpointInfo) -> None:
        meta = self.read_metadata() or CheckpointMetadata()
        names = [p for p in meta.all_model_checkpoint_paths if self._resolve(p).prefix != info.prefix]
        names.append(info.name)
        dropped = names[: max(0, len(names) - self.keep_max)]
        kept = names[len(dropped):]
        atomic_write_bytes(
            self.metadata_path,
            CheckpointMetadata(info.name, kept).render().encode(),
        )
        for name in dropped:
            for path in self._resolve(name).files():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    # --- loading ----------------------------------------------------------------------------
    def load(self, info: CheckpointInfo | str | os.PathLike[str]) -> LoadedCheckpoint:
        """Read and verify one checkpoint; raises :class:`CorruptCheckpointError`."""
        if not isinstance(info, CheckpointInfo):
            info = self._resolve(str(info))
        tensors_path, state_path, manifest_path = info.files()
        try:
            manifest = json.loads(manifest_path.read_bytes())
        except FileNotFoundError as exc:
            raise CorruptCheckpointError(f"{info.prefix}: no manifest ({manifest_path.name})") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptCheckpointError(f"{manifest_path}: unreadable manifest: {exc}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise CorruptCheckpointError(f"{manifest_path}: not a {FORMAT} manifest")
        files = manifest.get("files", {})
        step = manifest.get("step")
        if not isinstance(files, dict) or not isinstance(step, int) or isinstance(step, bool):
            raise CorruptCheckpointError(f"{manifest_path}: manifest has no valid files/step")
        hashes: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        for path in (tensors_path, state_path):
            entry = files.get(path.name)
            if not isinstance(entry, dict):
                raise CorruptCheckpointError(f"{manifest_path}: does not list {path.name}")
            try:
                data = path.read_bytes()
            except FileNotFoundError as exc:
                raise CorruptCheckpointError(f"{path}: missing") from exc
            if len(data) != entry.get("size"):
                raise CorruptCheckpointError(
                    f"{path}: truncated or grown ({len(data)} bytes, manifest says {entry.get('size')})"
                )
            digest = sha256_bytes(data)
            if digest != entry.get("sha256"):
                raise CorruptCheckpointError(f"{path}: sha256 mismatch (content hash check failed)")
            hashes[path.name] = digest
            blobs[path.name] = data
        chash = content_hash(hashes)
        if chash != manifest.get("content_sha256"):
            raise CorruptCheckpointError(f"{manifest_path}: content hash mismatch")
        try:
            tensors = safetensors.torch.load(blobs[tensors_path.name])
            state = json.loads(blobs[state_path.name])
            codec.decode(state, tensors)  # a foreign payload, e.g. an array of another size
        except Exception as exc:  # noqa: BLE001 - any parse failure means corrupt
            raise CorruptCheckpointError(f"{info.prefix}: unreadable payload: {exc}") from exc
        return LoadedCheckpoint(CheckpointInfo(info.prefix, step), tensors, state, chash)

    def restore_order(self) -> list[CheckpointInfo]:
        """Checkpoints to try, best first: selected, older kept ones, older complete ones on disk."""
        meta = self.read_metadata()
        order: list[CheckpointInfo] = []
        if meta is not None and meta.model_checkpoint_path is not None:
            selected = self._resolve(meta.model_checkpoint_path)
            order.append(selected)
            listed = [self._resolve(p) for p in meta.all_model_checkpoint_paths]
            # only older ones, newest first: after a run went on from a checkpoint selected by
            # hand, the list still holds the newer ones of the branch it abandoned
            order += sorted((c for c in reversed(listed) if c.step < selected.step),
                            key=lambda c: c.step, reverse=True)
            limit = selected.step
        else:
            limit = None
        seen = {c.prefix for c in order}
        extra = [
            c for c in reversed(self.on_disk())
            if c.prefix not in seen and (limit is None or c.step < limit)
        ]
        return order + extra

    def load_latest(self) -> LoadedCheckpoint | None:
        """The selected checkpoint, or the newest sound one before it; ``None`` if there is none.

        Every checkpoint skipped on the way is logged as a warning and appended to
        :attr:`problems`.
        """
        for info in self.restore_order():
            try:
                return self.load(info)
            except CorruptCheckpointError as exc:
                self._problem(f"skipping checkpoint {info.name}: {exc}")
        return None

    def latest_step(self) -> int | None:
        """The step of the checkpoint :meth:`load_latest` would return (verifies hashes)."""
        ckpt = self.load_latest()
        return None if ckpt is None else ckpt.info.step

    def _problem(self, message: str) -> None:
        log.warning("%s", message)
        self.problems.append(message)


def latest_checkpoint(directory: str | os.PathLike[str]) -> CheckpointInfo | None:
    """The checkpoint the ``checkpoint`` metadata file in ``directory`` selects, if any."""
    store = CheckpointStore(directory)
    return store.selected()
