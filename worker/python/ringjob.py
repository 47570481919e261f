"""ringjob: the Python binding of libringjob (ctypes over libringjob.so).

The same operations as worker/ringjob.h, with Python names:

    import ringjob
    ringjob.init()                      # reads RINGJOB_* from the environment
    ringjob.report(step, loss, samples, seconds)
    d = ringjob.poll(step)              # CONTINUE, SUSPEND or CHECKPOINT_EXIT
    if d == ringjob.SUSPEND:            # free accelerator memory, then:
        d = ringjob.suspended_wait()    # blocks until resumed (CONTINUE) or CHECKPOINT_EXIT
    if d == ringjob.CHECKPOINT_EXIT:
        path = ringjob.checkpoint_path("model.pt")   # write it (atomically), then:
        ringjob.checkpoint_done(step); ringjob.finalize(); sys.exit(ringjob.EXIT_PLANNED)
    # a checkpoint written while training goes on (every N steps): say so, so that a
    # preemption is charged only what it would redo since
    ringjob.checkpoint_saved(step)

The library is found through RINGJOB_LIBRARY (a path), else build/lib/libringjob.so of the
source tree this file lives in, else the system's libringjob.so.0 (the runtime library;
libringjob.so, the development symlink, last). Multi-process programs
register the rank agreement with set_broadcast(fn): fn(data: bytes) -> bytes returns, on
every rank, rank 0's bytes (with mpi4py: comm.bcast(data, root=0)); errors raise
RingjobError carrying the library's text.
"""
import ctypes
import os

CONTINUE = 0
SUSPEND = 1
CHECKPOINT_EXIT = 2
EXIT_PLANNED = 0

_BROADCAST_F = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class RingjobError(RuntimeError):
    """A libringjob call failed; the message is the library's ringjob_error()."""


def _candidates():
    env = os.environ.get("RINGJOB_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "..", "..", "build", "lib", "libringjob.so"), "libringjob.so.0",
            "libringjob.so"]


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise RingjobError("cannot load libringjob: " + "; ".join(errors))


_lib = _load()
_SIGNATURES = {
    "ringjob_init": (ctypes.c_int, []),
    "ringjob_finalize": (None, []),
    "ringjob_set_broadcast": (None, [_BROADCAST_F, ctypes.c_void_p]),
    "ringjob_report": (ctypes.c_int, [ctypes.c_long, ctypes.c_double, ctypes.c_long,
                                      ctypes.c_double]),
    "ringjob_poll": (ctypes.c_int, [ctypes.c_long]),
    "ringjob_set_total_steps": (ctypes.c_int, [ctypes.c_long]),
    "ringjob_report_grad": (ctypes.c_int, [ctypes.c_double, ctypes.c_double]),
    "ringjob_report_fits": (ctypes.c_int, [ctypes.c_long]),
    "ringjob_batch": (ctypes.c_long, []),
    "ringjob_init_batch": (ctypes.c_long, []),
    "ringjob_max_local_batch": (ctypes.c_long, []),
    "ringjob_suspended_wait": (ctypes.c_int, []),
    "ringjob_checkpoint_path": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.c_size_t]),
    "ringjob_checkpoint_done": (ctypes.c_int, [ctypes.c_long]),
    "ringjob_checkpoint_saved": (ctypes.c_int, [ctypes.c_long]),
    "ringjob_rank": (ctypes.c_int, []),
    "ringjob_world_size": (ctypes.c_int, []),
    "ringjob_lr_scale": (ctypes.c_double, []),
    "ringjob_job_id": (ctypes.c_char_p, []),
    "ringjob_plan": (ctypes.c_char_p, []),
    "ringjob_checkpoint_dir": (ctypes.c_char_p, []),
    "ringjob_connected": (ctypes.c_int, []),
    "ringjob_error": (ctypes.c_char_p, []),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(_lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

_broadcast_ref = None  # keeps the ctypes callback alive while the library holds it


def error():
    """Text of the last failure."""
    return _lib.ringjob_error().decode(errors="replace")


def _check(rc):
    if rc < 0:
        raise RingjobError(error())
    return rc


def init():
    """Reads the environment and connects to the worker (rank 0). Raises on failure."""
    _check(_lib.ringjob_init())


def finalize():
    """Flushes reports, says goodbye, closes the channel. Safe to call twice."""
    _lib.ringjob_finalize()


def set_broadcast(fn):
    """Registers fn(data: bytes) -> bytes giving every rank rank 0's data; None removes it."""
    global _broadcast_ref
    if fn is None:
        _broadcast_ref = None
        _lib.ringjob_set_broadcast(_BROADCAST_F(), None)
        return

    def trampoline(buf, size, _ctx):
        try:
            out = fn(ctypes.string_at(buf, size))
            if len(out) != size:
                return -1
            ctypes.memmove(buf, out, size)
            return 0
        except Exception:  # an exception must not cross into C
            return -1

    _broadcast_ref = _BROADCAST_F(trampoline)
    _lib.ringjob_set_broadcast(_broadcast_ref, None)


def report(step, loss, samples, seconds):
    """Records one minibatch (rank 0 sends, batched, without blocking)."""
    _check(_lib.ringjob_report(int(step), float(loss), int(samples), float(seconds)))


def set_total_steps(total):
    """Says how many steps the job runs in all, so that the scheduler plans on it."""
    _check(_lib.ringjob_set_total_steps(int(total)))


def report_grad(sqr, var):
    """The gradient's squared norm and variance at the initial batch (its noise scale)."""
    _check(_lib.ringjob_report_grad(float(sqr), float(var)))


def report_fits(max_local):
    """The most examples one rank fits on its GPU at once (ringjob_report_fits): the scheduler
    takes it as this GPU model's largest local batch."""
    _check(_lib.ringjob_report_fits(int(max_local)))


def poll(step):
    """At a minibatch boundary: CONTINUE, SUSPEND or CHECKPOINT_EXIT, the same on all ranks."""
    return _check(_lib.ringjob_poll(int(step)))


def suspended_wait():
    """After SUSPEND, with state moved off the accelerator: blocks until resumed."""
    return _check(_lib.ringjob_suspended_wait())


def checkpoint_path(name):
    """Path of checkpoint file `name` in the job's checkpoint directory (created)."""
    buf = ctypes.create_string_buffer(4096)
    _check(_lib.ringjob_checkpoint_path(name.encode(), buf, len(buf)))
    return buf.value.decode()


def checkpoint_done(step):
    """Tells the worker the checkpoint of `step` is complete; then exit with EXIT_PLANNED."""
    _check(_lib.ringjob_checkpoint_done(int(step)))


def checkpoint_saved(step):
    """Tells the worker a checkpoint of `step`, written while training goes on, is complete."""
    _check(_lib.ringjob_checkpoint_saved(int(step)))


def rank():
    return _lib.ringjob_rank()


def world_size():
    return _lib.ringjob_world_size()


def lr_scale():
    """Factor on the learning rate: with a batch model, on the rate tuned at the initial
    batch, by the job's lr_scaling (sqrt(batch() / init_batch()) by default); otherwise on
    the one-rank rate (eq. 7: the world size unless the worker says). It changes with a
    batch changed in place: read it after every poll()."""
    return _lib.ringjob_lr_scale()


def batch():
    """The global batch the scheduler chose (0: none; keep your own). The scheduler may
    change it while the job runs, without a restart: after a poll() that took a new batch it
    returns that one on every rank, and the next step runs it (examples/train_torch.py)."""
    return _lib.ringjob_batch()


def init_batch():
    """The job's initial global batch M0 (0: it declared none)."""
    return _lib.ringjob_init_batch()


def max_local_batch():
    """The most examples a rank computes at once (0: no bound): a larger share of batch()
    is run as ceil(share / max) micro-steps whose gradients are summed before the step's
    exchange (gradient accumulation)."""
    return _lib.ringjob_max_local_batch()


def job_id():
    return _lib.ringjob_job_id().decode(errors="replace")


def plan():
    return _lib.ringjob_plan().decode(errors="replace")


def checkpoint_dir():
    return _lib.ringjob_checkpoint_dir().decode(errors="replace")


def connected():
    return bool(_lib.ringjob_connected())
