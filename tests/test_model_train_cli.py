"""The learned aligner trains through the runtime: `homalign train --config ... --logdir ...`."""

import shutil
from pathlib import Path

from homalign.cli import main
from homalign.evaluate import bundled_homstrad_dev
from homalign.train.config import get_model_factory, load_config, tomllib

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "aligner.toml"


def test_shipped_config_names_a_loadable_model():
    cfg = load_config(CONFIG)
    assert cfg.model == "homalign.model.task:learned-aligner"
    from homalign.model.task import make_aligner_task

    assert get_model_factory(cfg.model) is make_aligner_task


def test_homalign_train_runs_the_aligner_and_checkpoints(tmp_path):
    data = tmp_path / "families"
    for fam in ("ALAD", "B"):
        shutil.copytree(bundled_homstrad_dev() / fam, data / fam)
    text = CONFIG.read_text()
    cfg = tomllib.loads(text)
    cfg_file = tmp_path / "tiny.toml"
    lines = [f'model = "{cfg["model"]}"', "seed = 0", "[model_args]",
             f'homstrad = "{data}"', 'tmalign = ""', "window = 64", "val_fraction = 0.0",
             "[model_args.config]", "dim = 8", "[train]", "steps = 3", "batch_size = 2",
             "save_model_steps = 1", "log_every_steps = 1", "save_summaries_secs = 0.0"]
    cfg_file.write_text("\n".join(lines) + "\n")
    logdir = tmp_path / "run"
    assert main(["train", "--config", str(cfg_file), "--logdir", str(logdir)]) == 0
    meta = (logdir / "checkpoint").read_text()
    assert "model.ckpt-3" in meta
    # a second invocation resumes at step 3 and has nothing left to do
    assert main(["train", "--config", str(cfg_file), "--logdir", str(logdir)]) == 0
    assert "model.ckpt-3" in (logdir / "checkpoint").read_text()
