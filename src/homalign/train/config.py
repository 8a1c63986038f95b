"""Training configs (TOML) and the registry of model factories.

A config names a registered model factory and its arguments, plus the training settings::

    model = "toy-regression"     # a name given to register_model()
    seed = 0

    [model_args]                 # keyword arguments of the factory
    hidden = 32

    [train]                      # see TrainSettings for every key and its default
    steps = 200
    batch_size = 16
    optimizer = "adam"           # adam | adamw | sgd
    lr = 0.01
    save_model_steps = 50

    [eval]                       # optional: continuous evaluation (see EvalSettings)
    metric = "f1"
    mode = "max"
    throttle_secs = 300

    [warm_start]                 # optional: start from another run's export (WarmStartSettings)
    source = "runs/base/export/best.safetensors"

    [average]                    # optional: export the mean of the weights at these steps
    steps = [750, 1000]

Any value can be overridden from the command line: ``homalign train ... --set train.steps=10
--set warm_start.source=runs/x/export/best.safetensors`` (:func:`apply_overrides`).

Other packages register their models without this module importing them::

    from homalign.train.config import register_model
    register_model("learned-aligner", make_aligner_task)   # factory(**model_args) -> TrainTask
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from homalign.errors import InputError
from homalign.train.task import TrainTask

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package (a dependency there)
    import tomli as tomllib

ModelFactory = Callable[..., TrainTask]

_MODELS: dict[str, ModelFactory] = {}


def register_model(name: str, factory: ModelFactory, *, replace: bool = False) -> None:
    """Make ``factory(**model_args) -> TrainTask`` available to configs as ``model = name``."""
    if name in _MODELS and not replace and _MODELS[name] is not factory:
        raise ValueError(f"model {name!r} is already registered")
    _MODELS[name] = factory


def registered_models() -> list[str]:
    """The registered model names."""
    return sorted(_MODELS)


def get_model_factory(name: str) -> ModelFactory:
    """The factory registered as ``name``.

    ``"package.module:name"`` first imports ``package.module`` (which registers its models on
    import), so a config can name a model of any package without this runtime importing it.
    """
    if ":" in name:
        module, name = name.split(":", 1)
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(f"model module {module!r} cannot be imported: {exc}") from exc
    try:
        return _MODELS[name]
    except KeyError:
        raise ValueError(
            f"unknown model {name!r}; registered: {', '.join(registered_models())}"
        ) from None


@dataclass(frozen=True)
class TrainSettings:
    """The ``[train]`` table."""

    steps: int = 1000
    batch_size: int = 32
    optimizer: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    momentum: float = 0.9
    scheduler: str = "none"  # none | cosine | cosine-closed | step
    scheduler_step_size: int = 1000
    scheduler_gamma: float = 0.5
    save_model_secs: float = 600.0
    save_model_steps: int | None = None
    save_summaries_secs: float = 120.0
    keep_max: int = 5
    async_save: bool = True
    log_every_steps: int = 100
    num_workers: int = 0
    prefetch: int = 0
    clip_grad_norm: float = 0.0  # > 0: clip the gradients' global norm to this before each step
    decay_matrices_only: bool = False  # weight decay on parameters with >= 2 dims only


@dataclass(frozen=True)
class EvalSettings:
    """The ``[eval]`` table: evaluate new checkpoints with the task's ``evaluate`` function.

    While training, the chief evaluates the newest checkpoint (if not evaluated yet) at most every
    ``throttle_secs``, and once more after the final checkpoint when ``final``; whenever
    ``metric`` beats the best value so far (``mode`` "max" or "min"), the model is exported as
    ``<logdir>/export/best.safetensors`` + ``best.json``.
    """

    metric: str = "loss"
    mode: str = "min"
    throttle_secs: float = 600.0
    final: bool = True


@dataclass(frozen=True)
class WarmStartSettings:
    """The ``[warm_start]`` table: initialise a new run (never a resumed one) from ``source``.

    ``source`` is an export (``.safetensors``), a checkpoint prefix or a logdir
    (:func:`homalign.train.warm_start.load_weights`); ``include``/``exclude`` select parameters
    by name or fnmatch pattern. A selected parameter that the source lacks or has in another
    shape is an error unless it matches ``allow_missing`` (new parts that start at their
    initial values, e.g. ``encoder.template.*``).
    """

    source: str = ""
    include: list = field(default_factory=lambda: ["*"])
    exclude: list = field(default_factory=list)
    allow_missing: list = field(default_factory=list)


@dataclass(frozen=True)
class AverageSettings:
    """The ``[average]`` table: stochastic weight averaging over one run's steps.

    The chief saves the model's tensors after each listed step (``<logdir>/average/``); when the
    run reaches its last step it exports their element-wise mean (float64) as
    ``<logdir>/export/<name>`` with the task's ``export`` (evaluated with the task's
    ``evaluate`` first, when it has one).
    """

    steps: list = field(default_factory=list)
    name: str = "average"


@dataclass(frozen=True)
class TrainConfig:
    """A parsed config file."""

    model: str
    model_args: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    train: TrainSettings = field(default_factory=TrainSettings)
    path: str | None = None
    eval: EvalSettings | None = None
    warm_start: WarmStartSettings | None = None
    average: AverageSettings | None = None
    overrides: tuple[str, ...] = ()

    def with_steps(self, steps: int | None) -> TrainConfig:
        """A copy with ``train.steps`` replaced (unchanged when ``steps`` is None)."""
        if steps is None:
            return self
        return dataclasses.replace(self, train=dataclasses.replace(self.train, steps=steps))


def _check_keys(table: Mapping[str, Any], allowed: Iterable[str], path: str, where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)} in {where}", path=path)


def _typed_table(table: Mapping[str, Any], cls: type, path: str, where: str) -> dict[str, Any]:
    """``table`` checked against the fields of the dataclass ``cls`` (names and types)."""
    table = dict(table)
    _check_keys(table, {f.name for f in dataclasses.fields(cls)}, path, where)
    defaults = cls()
    for key, value in table.items():
        default = getattr(defaults, key)
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(value, bool):
            ok = False
        elif default is None or isinstance(default, int):
            ok = isinstance(value, int)
        elif isinstance(default, float):
            ok = isinstance(value, int | float)
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise InputError(f"{where} {key} = {value!r} has the wrong type", path=path)
        if isinstance(default, float):
            table[key] = float(value)
    return table


def _parse_eval(table: Any, where: str) -> EvalSettings:
    if not isinstance(table, Mapping):
        raise InputError("[eval] must be a table", path=where)
    settings = EvalSettings(**_typed_table(table, EvalSettings, where, "[eval]"))
    if settings.mode not in ("min", "max"):
        raise InputError(f"[eval] mode {settings.mode!r}: use min or max", path=where)
    if not (settings.throttle_secs > 0 and math.isfinite(settings.throttle_secs)):
        raise InputError("[eval] throttle_secs must be a positive number", path=where)
    return settings


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _parse_warm_start(table: Any, where: str) -> WarmStartSettings:
    if not isinstance(table, Mapping):
        raise InputError("[warm_start] must be a table", path=where)
    settings = WarmStartSettings(**_typed_table(table, WarmStartSettings, where, "[warm_start]"))
    if not settings.source:
        raise InputError("[warm_start] needs a source (an export, checkpoint or logdir)",
                         path=where)
    for key in ("include", "exclude", "allow_missing"):
        if not _str_list(getattr(settings, key)):
            raise InputError(f"[warm_start] {key} must be a list of names or patterns",
                             path=where)
    return settings


def _parse_average(table: Any, where: str) -> AverageSettings:
    if not isinstance(table, Mapping):
        raise InputError("[average] must be a table", path=where)
    settings = AverageSettings(**_typed_table(table, AverageSettings, where, "[average]"))
    steps = settings.steps
    if (not steps or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0
                             for k in steps) or len(set(steps)) != len(steps)):
        raise InputError("[average] steps must be distinct positive step numbers", path=where)
    if not settings.name or "/" in settings.name:
        raise InputError(f"[average] name {settings.name!r} must be a plain name", path=where)
    return settings


def apply_overrides(data: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """``data`` (a config mapping) with ``KEY=VALUE`` overrides applied.

    ``KEY`` is dotted (``train.steps``, ``model_args.config.dim``, ``warm_start.source``); the
    tables on the way are created when absent. ``VALUE`` is read as a TOML value (``10``,
    ``1e-3``, ``true``, ``[1, 2]``, ``"text"``); anything that is not one is taken as a string.
    """
    out: dict[str, Any] = _deep_copy(data)
    for item in overrides:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise InputError(f"--set {item!r}: use KEY=VALUE with a dotted KEY")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        table = out
        for name in parts[:-1]:
            nxt = table.setdefault(name, {})
            if not isinstance(nxt, dict):
                raise InputError(f"--set {item!r}: {name} is not a table")
            table = nxt
        table[parts[-1]] = value
    return out


def _deep_copy(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, Mapping) else v for k, v in data.items()}


def _check_settings(s: TrainSettings, where: str) -> None:
    """InputError naming the first ``[train]`` value outside its range."""
    def finite(x: float) -> bool:
        return math.isfinite(x)

    rules = [
        ("steps", s.steps >= 0, ">= 0"), ("batch_size", s.batch_size >= 1, ">= 1"),
        ("lr", finite(s.lr) and s.lr > 0, "a positive number"),
        ("weight_decay", finite(s.weight_decay) and s.weight_decay >= 0, ">= 0"),
        ("momentum", finite(s.momentum) and 0 <= s.momentum < 1, "in [0, 1)"),
        ("scheduler_step_size", s.scheduler_step_size >= 1, ">= 1"),
        ("scheduler_gamma", finite(s.scheduler_gamma) and s.scheduler_gamma > 0,
         "a positive number"),
        ("save_model_secs", finite(s.save_model_secs) and s.save_model_secs >= 0,
         "a number of seconds >= 0 (0: no timed checkpoints)"),
        ("save_model_steps", s.save_model_steps is None or s.save_model_steps >= 1, ">= 1"),
        ("save_summaries_secs", finite(s.save_summaries_secs) and s.save_summaries_secs >= 0,
         "a number of seconds >= 0 (0: no timed summaries)"),
        ("keep_max", s.keep_max >= 1, ">= 1"),
        ("log_every_steps", s.log_every_steps >= 0, ">= 0 (0: no step log)"),
        ("num_workers", s.num_workers >= 0, ">= 0"), ("prefetch", s.prefetch >= 0, ">= 0"),
        ("clip_grad_norm", finite(s.clip_grad_norm) and s.clip_grad_norm >= 0, ">= 0"),
    ]
    for name, ok, rule in rules:
        if not ok:
            raise InputError(f"[train] {name} = {getattr(s, name)!r} must be {rule}", path=where)


def parse_config(data: Mapping[str, Any], path: str | None = None,
                 overrides: Iterable[str] = ()) -> TrainConfig:
    """Validate a config mapping (as read from TOML), after ``overrides``
    (:func:`apply_overrides`)."""
    overrides = tuple(overrides)
    if overrides:
        data = apply_overrides(data, overrides)
    where = path or "<config>"
    _check_keys(data, ("model", "model_args", "seed", "train", "eval", "warm_start", "average"),
                where, "the top level")
    if not isinstance(data.get("model"), str):
        raise InputError("'model' must name a registered model", path=where)
    for table in ("train", "model_args"):
        if not isinstance(data.get(table, {}), Mapping):
            raise InputError(f"[{table}] must be a table, not {data[table]!r}", path=where)
    settings = TrainSettings(**_typed_table(data.get("train", {}), TrainSettings, where, "[train]"))
    _check_settings(settings, where)
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise InputError(f"seed = {seed!r} must be a non-negative integer below 2**32",
                         path=where)
    if settings.optimizer not in ("adam", "adamw", "sgd"):
        raise InputError(f"[train] optimizer {settings.optimizer!r}: use adam, adamw or sgd",
                         path=where)
    if settings.scheduler not in ("none", "cosine", "cosine-closed", "step"):
        raise InputError(f"[train] scheduler {settings.scheduler!r}: use none, cosine, "
                         "cosine-closed or step",
                         path=where)
    return TrainConfig(
        model=data["model"],
        model_args=dict(data.get("model_args", {})),
        seed=seed,
        train=settings,
        path=path,
        eval=None if "eval" not in data else _parse_eval(data["eval"], where),
        warm_start=(None if "warm_start" not in data
                    else _parse_warm_start(data["warm_start"], where)),
        average=None if "average" not in data else _parse_average(data["average"], where),
        overrides=overrides,
    )


def load_config(path: str | os.PathLike[str], overrides: Iterable[str] = ()) -> TrainConfig:
    """Read and validate a TOML config file (with ``--set`` style ``overrides``)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path=p) from exc
    return parse_config(data, str(p), overrides)


def build_task(config: TrainConfig) -> TrainTask:
    """Call the registered factory with the config's ``model_args``."""
    factory = get_model_factory(config.model)
    try:
        return factory(**config.model_args)
    except TypeError as exc:
        raise InputError(f"[model_args] do not fit model {config.model!r}: {exc}",
                         path=config.path) from exc


def parameter_groups(model: torch.nn.Module, s: TrainSettings) -> list[dict[str, Any]]:
    """The model's parameters for :func:`make_optimizer`: one group, or with
    ``decay_matrices_only`` the matrices (>= 2 dims, weight decay) and the rest (no decay)."""
    params = list(model.parameters())
    if not s.decay_matrices_only:
        return [{"params": params}]
    return [{"params": [p for p in params if p.dim() >= 2]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]


def make_optimizer(params: Iterable[Any], s: TrainSettings) -> torch.optim.Optimizer:
    """The optimizer the settings name (``params``: parameters or parameter groups)."""
    if s.optimizer == "adam":
        return torch.optim.Adam(params, lr=s.lr, weight_decay=s.weight_decay)
    if s.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay)
    return torch.optim.SGD(params, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)


def make_scheduler(opt: torch.optim.Optimizer, s: TrainSettings) -> Any:
    """The LR scheduler the settings name, or ``None``.

    ``cosine`` is torch's ``CosineAnnealingLR``, which updates the rate recursively from the
    previous step's; ``cosine-closed`` sets ``lr * 0.5 * (1 + cos(pi * k / steps))`` afresh at
    step k, the same curve without the accumulated rounding (the schedule that trained the
    shipped ``learned`` aligner)."""
    if s.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, s.steps))
    if s.scheduler == "cosine-closed":
        steps = max(1, s.steps)
        return torch.optim.lr_scheduler.LambdaLR(
            opt, lambda k: 0.5 * (1 + math.cos(math.pi * k / steps)))
    if s.scheduler == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=s.scheduler_step_size,
                                               gamma=s.scheduler_gamma)
    return None


def _register_builtin() -> None:
    from homalign.train.toy import toy_task

    register_model("toy-regression", toy_task, replace=True)


_register_builtin()
