#!/usr/bin/python3
"""train_torch: a data-parallel PyTorch trainer that runs under Ringmaster.

A small CNN (two 3x3 conv layers, one linear layer) learns to tell 10 classes of synthetic
1x16x16 images apart: each class is a fixed random smooth pattern (drawn from --seed),
every sample is its class's pattern, shifted by up to 2 pixels, plus Gaussian noise.
Every rank draws its own minibatch from a generator seeded by (seed, step, rank), so the
stream never repeats and any world size sees fresh data.

Ranks and world size come from OpenMPI's mpirun (the worker launches jobs with it).
Gradients (and the loss) are averaged over ranks with one MPI Allreduce through mpi4py;
rank 0's decisions reach the others through mpi4py's bcast. MPI, rather than
torch.distributed's gloo, because mpirun already connected the ranks, on one host or
several, with the transports the worker configured: gloo would need a rendezvous
(MASTER_ADDR/PORT) that the ranks cannot derive reliably, and its own network settings.
Without mpi4py, one process still runs (no mpirun, or -np 1).

libringjob (through worker/python/ringjob.py): every minibatch is reported and polled.
SUSPEND packs model and optimizer into one host blob and drops them (on a GPU this is
where accelerator memory is freed), blocks until resumed and rebuilds them.
CHECKPOINT_EXIT makes rank 0 torch.save {model, optimizer, step} into the job's
checkpoint directory (atomic rename); every rank then exits 0. On start a checkpoint
there is read by rank 0 and broadcast, whatever world size wrote it; the learning rate is
--lr (the one-rank rate) times ringjob.lr_scale() (eq. 7 of DESIGN.md). A job with a batch
model (its spec's "batch") runs ringjob.batch() examples a step over its ranks instead, at
--lr (the rate tuned at that initial batch) times lr_scale(); when the scheduler changes the
batch in place, the next step runs the new one at its rate, with no restart.

    mpirun -np 2 /usr/bin/python3 examples/train_torch.py [--steps N] [--batch-per-rank M]
        [--lr X] [--seed S] [--print-every K] [--threads T] [--step-seconds S]

Use Debian's /usr/bin/python3 (python3-torch, python3-mpi4py).
"""
import argparse
import io
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker",
                                "python"))
import ringjob  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CKPT = "train_torch.pt"
CLASSES = 10
SIDE = 16
SHIFT = 2
NOISE = 1.5


class Comm:
    """The ranks: mpi4py's COMM_WORLD, or one process alone."""

    def __init__(self):
        try:
            from mpi4py import MPI
        except ImportError:
            if int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) > 1:
                raise
            MPI = None
        self.mpi = MPI
        self.comm = MPI.COMM_WORLD if MPI else None
        self.rank = self.comm.Get_rank() if MPI else 0
        self.world = self.comm.Get_size() if MPI else 1

    def bcast(self, obj):
        return self.comm.bcast(obj, root=0) if self.comm else obj

    def allreduce_mean(self, t):
        """Averages the float32 tensor t over ranks, in place."""
        if self.comm and self.world > 1:
            self.comm.Allreduce(self.mpi.IN_PLACE, t.numpy(), op=self.mpi.SUM)
            t.div_(self.world)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * (SIDE // 4) ** 2, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def class_patterns(seed):
    """The 10 class patterns: smoothed random fields, unit variance."""
    g = torch.Generator().manual_seed(seed * 7919 + 17)
    p = torch.randn(CLASSES, 1, SIDE, SIDE, generator=g)
    k = torch.ones(1, 1, 3, 3) / 9.0
    p = F.conv2d(F.pad(p, (1, 1, 1, 1), mode="circular"), k)
    return p / p.std(dim=(1, 2, 3), keepdim=True)


def minibatch(patterns, args, step, rank, n):
    g = torch.Generator().manual_seed((args.seed * 1000003 + step) * 131 + rank)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    dx, dy = torch.randint(-SHIFT, SHIFT + 1, (2,), generator=g).tolist()
    x = torch.roll(patterns[y], shifts=(dx, dy), dims=(2, 3))
    return x + NOISE * torch.randn(x.shape, generator=g), y


class Trainer:
    def __init__(self, args, comm):
        self.args, self.comm = args, comm
        self.lr = args.lr * ringjob.lr_scale()
        self.step = 0
        self.size_batch()
        self.build(None)

    def size_batch(self):
        """The global batch (ringjob.batch(), the scheduler's, else --batch-per-rank on each
        rank) and this rank's share of it (the first batch % world ranks take one more)."""
        b, w, r = ringjob.batch(), self.comm.world, self.comm.rank
        if b > 0:
            b = max(b, w)
            self.batch, self.local = b, b // w + (1 if r < b % w else 0)
        else:
            self.batch, self.local = self.args.batch_per_rank * w, self.args.batch_per_rank

    def follow_batch(self):
        """After a poll: a batch the scheduler changed in place runs from the next step, at
        --lr times its lr_scale() (no restart)."""
        b = ringjob.batch()
        if b <= 0 or max(b, self.comm.world) == self.batch:
            return
        was = self.batch
        self.size_batch()
        self.lr = self.args.lr * ringjob.lr_scale()
        for group in self.opt.param_groups:
            group["lr"] = self.lr
        log(self.comm, "batch %d -> %d in place after step %d, lr %.5f"
            % (was, self.batch, self.step, self.lr))

    def build(self, state):
        torch.manual_seed(self.args.seed)
        self.model = Net()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=0.9)
        if state is not None:
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["optimizer"])
            for group in self.opt.param_groups:
                group["lr"] = self.lr  # the checkpoint's rate was for its world size
            self.step = state["step"]

    def state_blob(self):
        buf = io.BytesIO()
        torch.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                    "step": self.step}, buf)
        return buf.getvalue()

    def load_blob(self, blob):
        self.build(torch.load(io.BytesIO(blob)))

    def train_step(self, patterns):
        x, y = minibatch(patterns, self.args, self.step + 1, self.comm.rank, self.local)
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        grads = [p.grad for p in self.model.parameters()]
        # the mean over ranks of gradients weighted by their shares: the global batch's mean
        weight = self.local * self.comm.world / self.batch
        flat = torch.cat([g.reshape(-1) for g in grads] + [loss.detach().reshape(1)]) * weight
        self.comm.allreduce_mean(flat)
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view_as(g))
            off += g.numel()
        self.opt.step()
        self.step += 1
        return float(flat[-1])


def log(comm, text):
    if comm.rank == 0:
        print("train_torch: " + text, flush=True)


def restore(trainer, comm):
    """Every rank: loads the checkpoint rank 0 finds, if any. Returns True when restored."""
    blob = None
    if comm.rank == 0:
        path = ringjob.checkpoint_path(CKPT)
        if os.path.exists(path):
            with open(path, "rb") as f:
                blob = f.read()
    blob = comm.bcast(blob)
    if blob is None:
        return False
    trainer.load_blob(blob)
    return True


def save(trainer):
    path = ringjob.checkpoint_path(CKPT)
    with open(path + ".tmp", "wb") as f:
        f.write(trainer.state_blob())
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def suspend(trainer, comm):
    """Suspend in place: the state goes to one host blob, the model and optimizer are dropped
    (on a GPU: moved off it and torch.cuda.empty_cache()). Returns the wait's decision."""
    t0 = time.monotonic()
    blob = trainer.state_blob()
    trainer.model = trainer.opt = None
    log(comm, "suspended at step %d, %d bytes kept in %.1f ms"
        % (trainer.step, len(blob), (time.monotonic() - t0) * 1e3))
    d = ringjob.suspended_wait()
    trainer.load_blob(blob)
    log(comm, "resumed at step %d" % trainer.step)
    return d


def checkpoint_exit(trainer, comm):
    ok = True
    if comm.rank == 0:
        try:
            save(trainer)
        except OSError as e:
            print("train_torch: checkpoint failed: %s" % e, file=sys.stderr, flush=True)
            ok = False
    if not comm.bcast(ok):
        return 1
    if comm.rank == 0:
        ringjob.checkpoint_done(trainer.step)
    log(comm, "checkpointed at step %d, planned exit" % trainer.step)
    return ringjob.EXIT_PLANNED


def train(trainer, comm):
    args = trainer.args
    patterns = class_patterns(args.seed)
    while trainer.step < args.steps:
        t0 = time.monotonic()
        loss = trainer.train_step(patterns)
        pad = args.step_seconds - (time.monotonic() - t0)
        if pad > 0:
            time.sleep(pad)
        if trainer.step % args.print_every == 0 or trainer.step == args.steps:
            log(comm, "step %d loss %.6f world %d lr %.5f"
                % (trainer.step, loss, comm.world, trainer.lr))
        ringjob.report(trainer.step, loss, trainer.batch, time.monotonic() - t0)
        d = ringjob.poll(trainer.step)
        if d == ringjob.SUSPEND:
            d = suspend(trainer, comm)
        if d == ringjob.CHECKPOINT_EXIT:
            return checkpoint_exit(trainer, comm)
        trainer.follow_batch()
    log(comm, "done at step %d" % trainer.step)
    return 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch-per-rank", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.02, help="learning rate of one rank")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--print-every", type=int, default=50)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--step-seconds", type=float, default=0.0,
                   help="pad each step to at least this long (stands in for a bigger model)")
    args = p.parse_args()
    if args.steps < 0 or args.batch_per_rank < 1 or not 0 < args.lr < 10:
        p.error("bad --steps, --batch-per-rank or --lr")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    comm = Comm()
    ringjob.init()
    if comm.world > 1:
        ringjob.set_broadcast(comm.bcast)
    trainer = Trainer(args, comm)
    if restore(trainer, comm):
        log(comm, "restored step %d at world size %d, lr scale %g, lr %.5f"
            % (trainer.step, comm.world, ringjob.lr_scale(), trainer.lr))
    else:
        log(comm, "%d params, world size %d, lr scale %g, lr %.5f"
            % (sum(p.numel() for p in trainer.model.parameters()), comm.world,
               ringjob.lr_scale(), trainer.lr))
    try:
        rc = train(trainer, comm)
    except ringjob.RingjobError as e:
        print("train_torch: rank %d: %s" % (comm.rank, e), file=sys.stderr, flush=True)
        rc = 1
    ringjob.finalize()
    return rc


if __name__ == "__main__":
    sys.exit(main())
