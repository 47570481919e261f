#!/usr/bin/env python3
"""train_tiny: the smallest job that runs under Ringmaster, in pure Python.

Linear regression (8 inputs) by SGD with momentum on a synthetic stream drawn from a
fixed random teacher; each step's batch is seeded by (seed, step, rank). It uses the
Python binding of libringjob: reports every step, polls, suspends in place (its state
is packed into one bytes object and the working lists dropped), and on checkpoint-exit
writes a JSON checkpoint (step, weights, momentum) with an atomic rename and exits 0.
On start it restores that checkpoint if present; the learning rate is --lr times
ringjob.lr_scale() (eq. 7).

    python3 examples/train_tiny.py [--steps N] [--lr X] [--batch M] [--seed S]
"""
import argparse
import json
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker",
                                "python"))
import ringjob  # noqa: E402

DIM = 8
CKPT = "train_tiny.json"


def teacher(seed):
    rng = random.Random(seed * 7919 + 17)
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)], rng.gauss(0.0, 1.0)


def step_grad(state, args, tw, tb):
    rng = random.Random((args.seed * 1000003 + state["step"]) * 131 + ringjob.rank())
    w, b = state["w"], state["b"]
    gw, gb, loss = [0.0] * DIM, 0.0, 0.0
    for _ in range(args.batch):
        x = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
        y = sum(t * xi for t, xi in zip(tw, x)) + tb + 0.01 * rng.gauss(0.0, 1.0)
        e = sum(wi * xi for wi, xi in zip(w, x)) + b - y
        loss += 0.5 * e * e
        gw = [g + e * xi for g, xi in zip(gw, x)]
        gb += e
    n = float(args.batch)
    return [g / n for g in gw], gb / n, loss / n


def sgd(state, gw, gb, lr):
    mw, mb = state["mw"], state["mb"]
    state["mw"] = [0.9 * m + g for m, g in zip(mw, gw)]
    state["mb"] = 0.9 * mb + gb
    state["w"] = [w - lr * m for w, m in zip(state["w"], state["mw"])]
    state["b"] -= lr * state["mb"]


def save(state):
    path = ringjob.checkpoint_path(CKPT)
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def load():
    path = ringjob.checkpoint_path(CKPT)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def suspend(state):
    """Packs the state into one blob and drops the working copy (what a GPU job frees)."""
    keys = ["w", "mw"]
    blob = struct.pack("%dd" % (2 * DIM + 3), *state["w"], *state["mw"], state["b"],
                       state["mb"], float(state["step"]))
    for k in keys:
        del state[k]
    print("train_tiny: suspended at step %d, %d bytes kept" % (state["step"], len(blob)),
          flush=True)
    d = ringjob.suspended_wait()
    v = struct.unpack("%dd" % (2 * DIM + 3), blob)
    state["w"], state["mw"] = list(v[:DIM]), list(v[DIM:2 * DIM])
    print("train_tiny: resumed at step %d" % state["step"], flush=True)
    return d


def train(args, state):
    tw, tb = teacher(args.seed)
    lr = args.lr * ringjob.lr_scale()
    while state["step"] < args.steps:
        t0 = time.monotonic()
        state["step"] += 1
        gw, gb, loss = step_grad(state, args, tw, tb)
        sgd(state, gw, gb, lr)
        if state["step"] % args.print_every == 0:
            print("step %d loss %.6f lr %.4f" % (state["step"], loss, lr), flush=True)
        ringjob.report(state["step"], loss, args.batch * ringjob.world_size(),
                       time.monotonic() - t0)
        d = ringjob.poll(state["step"])
        if d == ringjob.SUSPEND:
            d = suspend(state)
        if d == ringjob.CHECKPOINT_EXIT:
            save(state)
            ringjob.checkpoint_done(state["step"])
            print("train_tiny: checkpointed at step %d, planned exit" % state["step"],
                  flush=True)
            return ringjob.EXIT_PLANNED
    print("train_tiny: done at step %d" % state["step"], flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--print-every", type=int, default=25)
    args = p.parse_args()
    ringjob.init()
    state = load()
    if state is None:
        state = {"step": 0, "w": [0.0] * DIM, "b": 0.0, "mw": [0.0] * DIM, "mb": 0.0}
    else:
        print("train_tiny: restored step %d, lr scale %g" % (state["step"], ringjob.lr_scale()),
              flush=True)
    rc = train(args, state)
    ringjob.finalize()
    return rc


if __name__ == "__main__":
    sys.exit(main())
