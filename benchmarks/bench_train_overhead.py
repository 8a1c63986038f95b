"""Overhead of the Supervisor's checkpoint and summary services on step time (~5M parameters).

Alternates, round after round, a plain training loop and the same loop under a Supervisor with
the checkpoint service, the summary service and the step counter running, and compares the mean
time per step (the mean includes the steps that paid for a snapshot or a summary).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_train_overhead.py \
        --seconds 40 --rounds 3 --save-model-secs 10 --save-summaries-secs 2

It also reports the share of the training thread's time spent on snapshots and summaries (the
direct cost, insensitive to other load on the machine) and what one checkpoint and one summary
cost, so the overhead at the default intervals (600 s / 120 s) can be read off.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import torch

from homalign.train.data import ResumableLoader
from homalign.train.supervisor import Supervisor
from homalign.train.toy import ToyRegression, mse_loss, toy_dataset


def build(args: argparse.Namespace) -> tuple[ToyRegression, torch.optim.Optimizer, ResumableLoader]:
    torch.manual_seed(0)
    model = ToyRegression(args.in_features, args.hidden, args.layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    loader = ResumableLoader(toy_dataset(4096, args.in_features, seed=1), args.batch_size, seed=2)
    return model, opt, loader


def step_fn(model: ToyRegression, opt: torch.optim.Optimizer, batch: Any) -> torch.Tensor:
    loss = mse_loss(model, batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


def timed(batches: Iterator[Any], seconds: float, body: Any) -> list[float]:
    times: list[float] = []
    end = time.monotonic() + seconds
    t0 = time.perf_counter()
    for batch in batches:
        body(batch)
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
        if time.monotonic() >= end:
            break
    return times


def run_plain(args: argparse.Namespace) -> dict[str, Any]:
    model, opt, loader = build(args)
    times = timed(iter(loader), args.seconds, lambda b: step_fn(model, opt, b))
    return {"times": times}


def run_supervised(args: argparse.Namespace, logdir: str) -> dict[str, Any]:
    model, opt, loader = build(args)
    sv = Supervisor(logdir, model=model, optimizer=opt, data=loader,
                    save_model_secs=args.save_model_secs,
                    save_summaries_secs=args.save_summaries_secs, keep_max=2)
    snap_times: list[float] = []
    real_snapshot = sv.state.snapshot

    def measured_snapshot() -> Any:
        t = time.perf_counter()
        snap = real_snapshot()
        snap_times.append(time.perf_counter() - t)
        return snap

    sv.state.snapshot = measured_snapshot  # type: ignore[method-assign]
    write_times: list[float] = []
    real_write = sv._write

    def measured_write(snap: Any) -> Any:
        t = time.perf_counter()
        out = real_write(snap)
        write_times.append(time.perf_counter() - t)
        return out

    sv._write = measured_write  # type: ignore[method-assign]
    summary_times: list[float] = []
    real_summary_fn = sv.summary_fn
    assert real_summary_fn is not None

    def measured_summary_fn(session: Any) -> Any:
        t = time.perf_counter()
        out = real_summary_fn(session)
        summary_times.append(time.perf_counter() - t)
        return out

    sv.summary_fn = measured_summary_fn
    with sv.managed_session() as session:
        def body(batch: Any) -> None:
            with session.step():
                loss = step_fn(model, opt, batch)
            session.record(loss=loss)

        times = timed(iter(loader), args.seconds, body)
    n_summaries = sum(
        1 for t in sv.services if t.name == "summaries" for _ in range(getattr(t, "calls", 0))
    )
    blocked = sum(snap_times[:-1]) + sum(summary_times)  # the final snapshot is after the loop
    return {"times": times, "blocked_pct": 100 * blocked / sum(times),
            "summary_ms": 1e3 * statistics.fmean(summary_times) if summary_times else 0.0,
            "snapshots": snap_times[:-1] or snap_times,
            "writes": write_times[:-1] or write_times, "summaries": n_summaries,
            "checkpoints_during_run": max(0, len(sv.saved_steps) - 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=40.0, help="per variant and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--save-model-secs", type=float, default=10.0)
    p.add_argument("--save-summaries-secs", type=float, default=2.0)
    p.add_argument("--in-features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=1536)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    n_params = sum(q.numel() for q in ToyRegression(args.in_features, args.hidden,
                                                     args.layers).parameters())
    plain: list[float] = []
    sup: list[float] = []
    snaps: list[float] = []
    writes: list[float] = []
    per_round = []
    blocked_pcts: list[float] = []
    summary_ms: list[float] = []
    run_plain(argparse.Namespace(**{**vars(args), "seconds": 3.0}))  # warm-up
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ["plain", "supervised"] if r % 2 == 0 else ["supervised", "plain"]
            res: dict[str, Any] = {}
            for variant in order:
                if variant == "plain":
                    res["plain"] = run_plain(args)
                else:
                    res["supervised"] = run_supervised(args, os.path.join(tmp, f"r{r}"))
            plain += res["plain"]["times"]
            sup += res["supervised"]["times"]
            snaps += res["supervised"]["snapshots"]
            writes += res["supervised"]["writes"]
            pm = statistics.fmean(res["plain"]["times"])
            sm = statistics.fmean(res["supervised"]["times"])
            blocked_pcts.append(res["supervised"]["blocked_pct"])
            summary_ms.append(res["supervised"]["summary_ms"])
            per_round.append({"plain_ms": pm * 1e3, "supervised_ms": sm * 1e3,
                              "overhead_pct": 100 * (sm / pm - 1),
                              "training_thread_blocked_pct": res["supervised"]["blocked_pct"],
                              "checkpoints": res["supervised"]["checkpoints_during_run"]})
            print(f"round {r}: plain {pm * 1e3:.2f} ms/step, supervised {sm * 1e3:.2f} ms/step "
                  f"({100 * (sm / pm - 1):+.2f}%; training thread blocked "
                  f"{res['supervised']['blocked_pct']:.2f}%), "
                  f"{res['supervised']['checkpoints_during_run']} checkpoints", flush=True)
    pm, sm = statistics.fmean(plain), statistics.fmean(sup)
    snap_ms = 1e3 * statistics.fmean(snaps) if snaps else float("nan")
    write_s = statistics.fmean(writes) if writes else float("nan")
    ckpt_mb = 3 * n_params * 4 / 1e6
    result = {
        "parameters": n_params,
        "checkpoint_mb_approx": ckpt_mb,
        "plain_ms_per_step": pm * 1e3,
        "supervised_ms_per_step": sm * 1e3,
        "plain_median_ms": 1e3 * statistics.median(plain),
        "supervised_median_ms": 1e3 * statistics.median(sup),
        "overhead_pct": 100 * (sm / pm - 1),
        "rounds": per_round,
        "training_thread_blocked_pct": statistics.fmean(blocked_pcts),
        "summary_fn_ms_mean": statistics.fmean(summary_ms),
        "snapshot_ms_mean": snap_ms,
        "background_write_s_mean": write_s,
        "settings": vars(args),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
