"""Multi-process training on PyTorch's own engine: ``torchrun`` (torch elastic) + DistributedDataParallel.

``torchrun --nproc_per_node=N -m attnconv.train …`` starts N copies of the ordinary command line;
each finds its rank in the environment torchrun sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``/``MASTER_PORT``) and :func:`init_from_environment` joins the process group (NCCL on
CUDA, gloo on CPU). Without torchrun (or with one process) nothing here is used and training is
the single-process code, unchanged.

How the paper's optimisation is kept (the rules the training loop follows):

* **Global batch.** The batch of the config (the paper's 100) is the *global* batch: every step,
  the N ranks take contiguous slices of the very batch a single process would take
  (:func:`shard_bounds`; sizes differ by at most one), so the learning-rate schedule, the number
  of steps and the optimiser are those of one process. N must divide the batch
  (:func:`check_world_size`); any other N is refused rather than silently changing the schedule.
* **Gradients.** Each rank back-propagates the *sum* of its samples' losses divided by the global
  batch size, and the DDP communication hook :func:`sum_gradients_hook` sums (not averages) the
  gradients over ranks: the result is the gradient of the single-process mean loss, whatever the
  split (also for an uneven last batch).
* **Data order and augmentation.** Every rank draws the epoch's permutation and the whole global
  batch's crop offsets and flips from the same (seed, epoch) generators as a single process and
  keeps its slice: the global batch, augmentation included, is exactly the single-process one
  for any N (a ``DistributedSampler`` with ``set_epoch`` gives each rank a fixed 1/N of a
  permutation, which would change the batches with N).
* **Batch norm.** ResNet18's batch norm is synchronised over ranks (statistics of the global
  batch), by default: :class:`torch.nn.SyncBatchNorm` on CUDA, :class:`CpuSyncBatchNorm` on CPU
  (PyTorch's SyncBatchNorm runs on GPUs only).
* **Evaluation.** Rank r evaluates the evaluation batches r, r + N, r + 2N, … of the single-process
  evaluation (same batches, so the same logits), and the per-batch sums are reduced
  (:func:`sum_over_ranks`) and added in the single-process order: the test accuracy is exactly
  the single-process one for the same weights.
* **Dropout** draws from each rank's own generator (seeded from (seed, rank)): its masks differ
  from a single process's, in distribution only; the other random numbers do not depend on N.

Stopping: SIGTERM / SIGUSR1 (:class:`StopRequest`) finish the current step on every rank, save a
mid-epoch checkpoint and exit with :data:`EXIT_PREEMPTED`; a rank that dies makes the collective
operations of the others fail (gloo at once, NCCL at the process-group timeout), and they exit
with :data:`EXIT_PEER_LOST` and one line saying what was kept.
"""

from __future__ import annotations

import datetime
import os
import signal
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from torch import nn

from .device import cuda_available, gpu_count, use_device

__all__ = [
    "EXIT_PREEMPTED",
    "EXIT_PEER_LOST",
    "DEFAULT_TIMEOUT_SECONDS",
    "NCCL_ERROR_HANDLING",
    "DistributedSetupError",
    "PeerLostError",
    "DistContext",
    "environment_world_size",
    "check_world_size",
    "init_from_environment",
    "shard_bounds",
    "eval_batches_of_rank",
    "sum_over_ranks",
    "barrier",
    "any_rank",
    "gather_objects",
    "broadcast_object",
    "sum_gradients_hook",
    "CpuSyncBatchNorm",
    "convert_sync_batchnorm",
    "wrap_model",
    "StopRequest",
]

#: Exit status of a run stopped by SIGTERM/SIGUSR1 after saving its checkpoint (sysexits' EX_TEMPFAIL:
#: "try again later" — resume it).
EXIT_PREEMPTED = 75
#: Exit status of the surviving ranks when another rank died or stopped answering.
EXIT_PEER_LOST = 76
#: TORCH_NCCL_ASYNC_ERROR_HANDLING of a NCCL run (unless set in the environment): "2", clean up
#: the communicators and raise in the waiting call, so that a dead peer gives :data:`EXIT_PEER_LOST`.
NCCL_ERROR_HANDLING = "2"
#: Seconds a collective operation may wait for the other ranks before the run is stopped.
DEFAULT_TIMEOUT_SECONDS = 600


class DistributedSetupError(RuntimeError):
    """The multi-process settings cannot train the config as asked (e.g. N does not divide the batch)."""


class PeerLostError(RuntimeError):
    """Another rank died or did not answer within the timeout."""


@dataclass
class DistContext:
    """This process's place in a multi-process run."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    timeout_seconds: float
    sync_group: Optional[object] = (
        None  # process group of the CPU batch-norm synchronisation
    )

    @property
    def is_writer(self) -> bool:
        """Rank 0 writes the run folder; the others only compute."""
        return self.rank == 0

    def describe(self) -> dict:
        return {"world_size": self.world_size, "backend": self.backend}


def environment_world_size() -> int:
    """``WORLD_SIZE`` set by torchrun (1 without it)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def check_world_size(batch_size: int, world_size: int) -> None:
    """Refuse a number of processes that does not divide the global batch (the paper's 100): a
    different split would change the batch, hence the paper's schedule."""
    if world_size < 1 or batch_size % world_size:
        divisors = [d for d in range(1, batch_size + 1) if batch_size % d == 0]
        raise DistributedSetupError(
            f"{world_size} processes do not divide the global batch of {batch_size} images; the batch stays the "
            f"paper's, so use a number of processes that divides it ({', '.join(map(str, divisors[:12]))}"
            f"{', …' if len(divisors) > 12 else ''})."
        )


def init_from_environment(
    device_name: Optional[str] = None, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> Optional[DistContext]:
    """Join the process group torchrun described in the environment; ``None`` when there is one process.

    The device is ``cuda:LOCAL_RANK`` when CUDA is available and ``device_name`` does not ask for the
    CPU (backend NCCL), else the CPU (backend gloo); a LOCAL_RANK without a GPU of its own (more
    processes per machine than GPUs) is a :class:`DistributedSetupError`. ``timeout_seconds`` bounds every collective
    operation: a rank that waits longer on the others stops with :class:`PeerLostError`."""
    world = environment_world_size()
    if world <= 1:
        return None
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    wants_cpu = device_name is not None and torch.device(device_name).type == "cpu"
    if cuda_available() and not wants_cpu:
        gpus = gpu_count()
        if local_rank >= gpus:
            raise DistributedSetupError(
                f"process {local_rank} of this machine has no GPU: {gpus} GPU"
                f"{'s are' if gpus != 1 else ' is'} visible; use --nproc_per_node={gpus} "
                "or fewer (the batch is split over the processes, so fewer is fine)."
            )
        device, backend = torch.device("cuda", local_rank), "nccl"
        use_device(device)
        # On a failed collective NCCL's watchdog aborts the communicators and the waiting call
        # raises (2, "CleanUpOnly"), so the survivors exit 76 with a message (PeerLostError);
        # 1 and 3 would kill this process from the watchdog thread first.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", NCCL_ERROR_HANDLING)
    else:
        device, backend = torch.device("cpu"), "gloo"
    timeout = datetime.timedelta(seconds=timeout_seconds)
    kwargs = {"device_id": device} if backend == "nccl" else {}
    dist.init_process_group(backend, timeout=timeout, **kwargs)
    sync_group = (
        dist.new_group(backend="gloo", timeout=timeout) if backend == "gloo" else None
    )
    return DistContext(
        rank, world, local_rank, device, backend, timeout_seconds, sync_group
    )


def shard_bounds(n: int, rank: int, world_size: int) -> Tuple[int, int]:
    """The slice ``[lo, hi)`` of a batch of ``n`` that rank ``rank`` of ``world_size`` takes:
    contiguous, in rank order, sizes ``n // N`` or ``n // N + 1`` (as :func:`torch.tensor_split`)."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    q, r = divmod(n, world_size)
    lo = rank * q + min(rank, r)
    return lo, lo + q + (rank < r)


def eval_batches_of_rank(n_batches: int, rank: int, world_size: int) -> range:
    """The evaluation batches rank ``rank`` computes: ``rank, rank + N, …`` (whole batches of the
    single-process evaluation, so every logit is computed on the same batch as there)."""
    return range(rank, n_batches, world_size)


def sum_over_ranks(t: torch.Tensor) -> torch.Tensor:
    """``t`` summed over all ranks, in place (a :class:`PeerLostError` when a rank is gone)."""
    try:
        dist.all_reduce(t)
    except (
        RuntimeError,
        dist.DistError,
    ) as e:  # gloo: connection closed / timeout; NCCL: watchdog
        raise PeerLostError(_first_line(e)) from None
    return t


def barrier() -> None:
    """Wait for every rank (a :class:`PeerLostError` when a rank is gone)."""
    try:
        dist.barrier()
    except (RuntimeError, dist.DistError) as e:
        raise PeerLostError(_first_line(e)) from None


def any_rank(flag: bool, device: torch.device) -> bool:
    """True when ``flag`` is true on at least one rank."""
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    return bool(sum_over_ranks(t).item() > 0)


def gather_objects(obj) -> List[object]:
    """``obj`` of every rank, in rank order, on every rank."""
    out = [None] * dist.get_world_size()
    try:
        dist.all_gather_object(out, obj)
    except (RuntimeError, dist.DistError) as e:
        raise PeerLostError(_first_line(e)) from None
    return out


def broadcast_object(obj, src: int = 0):
    """Rank ``src``'s ``obj`` on every rank."""
    box = [obj]
    try:
        dist.broadcast_object_list(box, src=src)
    except (RuntimeError, dist.DistError) as e:
        raise PeerLostError(_first_line(e)) from None
    return box[0]


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else 'no details'}"


def sum_gradients_hook(
    process_group, bucket
):  # no annotations: DDP checks them against its own classes
    """DDP communication hook: the gradients *summed* over ranks (DDP's default averages them).
    With each rank's loss = (sum of its samples' losses) / global batch, the sum is the gradient
    of the single-process mean loss."""
    group = process_group if process_group is not None else dist.group.WORLD
    fut = dist.all_reduce(bucket.buffer(), group=group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


class _SumOverRanks(torch.autograd.Function):
    """y = Σ_r x_r on every rank; the gradient of x_r is Σ_r' ∂L_r'/∂y (every rank's loss depends on y)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        y = x.clone()
        dist.all_reduce(y, group=group)
        return y

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class CpuSyncBatchNorm(nn.BatchNorm2d):
    """Batch norm with the statistics of the global batch, over a gloo process group (what
    :class:`torch.nn.SyncBatchNorm` does on GPUs, which it is restricted to).

    Training mode: mean μ = Σ_r Σ x / n and biased variance σ² = Σ_r Σ (x − μ)² / n over all ranks
    (n: the global count per channel), y = (x − μ)/√(σ² + ε)·γ + β; the running variance takes the
    unbiased σ²·n/(n − 1), as :func:`torch.nn.functional.batch_norm`. Gradients flow through the
    sums (:class:`_SumOverRanks`). Evaluation mode: the running statistics,
    no communication. The state dict is that of :class:`torch.nn.BatchNorm2d`."""

    def __init__(self, *args, group=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.group = group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or not (dist.is_available() and dist.is_initialized()):
            return super().forward(x)
        group = self.group if self.group is not None else dist.group.WORLD
        dims = (0, 2, 3)
        count = torch.tensor(
            [float(x.shape[0] * x.shape[2] * x.shape[3])], dtype=torch.float64
        )
        try:
            dist.all_reduce(count, group=group)
            n = float(count.item())
            mean = _SumOverRanks.apply(x.sum(dims), group) / n
            centered = x - mean[None, :, None, None]
            var = _SumOverRanks.apply((centered * centered).sum(dims), group) / n
        except (RuntimeError, dist.DistError) as e:
            raise PeerLostError(_first_line(e)) from None
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                m = (
                    self.momentum
                    if self.momentum is not None
                    else 1.0 / float(self.num_batches_tracked)
                )
                self.running_mean.mul_(1 - m).add_(mean.detach(), alpha=m)
                self.running_var.mul_(1 - m).add_(
                    var.detach() * (n / max(n - 1.0, 1.0)), alpha=m
                )
        y = centered * torch.rsqrt(var + self.eps)[None, :, None, None]
        if self.affine:
            y = y * self.weight[None, :, None, None] + self.bias[None, :, None, None]
        return y


def convert_sync_batchnorm(model: nn.Module, ctx: DistContext) -> nn.Module:
    """``model`` with every ``BatchNorm2d`` synchronised over the ranks: PyTorch's SyncBatchNorm on
    CUDA, :class:`CpuSyncBatchNorm` on the CPU (same parameters and buffers)."""
    if ctx.device.type != "cpu":
        return nn.SyncBatchNorm.convert_sync_batchnorm(model)

    def convert(module: nn.Module) -> nn.Module:
        if isinstance(module, nn.BatchNorm2d) and not isinstance(
            module, CpuSyncBatchNorm
        ):
            new = CpuSyncBatchNorm(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                group=ctx.sync_group,
            )
            new.load_state_dict(module.state_dict())
            new.train(module.training)
            return new
        for name, child in module.named_children():
            setattr(module, name, convert(child))
        return module

    return convert(model)


def wrap_model(
    model: nn.Module, ctx: DistContext, sync_batchnorm: bool = True
) -> nn.Module:
    """``model`` (already on ``ctx.device``) in DistributedDataParallel with the summing hook, its
    batch norms synchronised when ``sync_batchnorm``. Without synchronisation every rank's running
    statistics are rank 0's (DDP broadcasts them at each forward)."""
    from torch.nn.parallel import DistributedDataParallel

    has_bn = any(
        isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()
    )
    if sync_batchnorm and has_bn:
        model = convert_sync_batchnorm(model, ctx)
    import inspect

    ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    sync_buffers = has_bn and not sync_batchnorm
    name = (
        "forward_sync_buffers"
        if "forward_sync_buffers"
        in inspect.signature(DistributedDataParallel).parameters
        else "broadcast_buffers"
    )  # the newer name of the same switch
    ddp = DistributedDataParallel(model, device_ids=ids, **{name: sync_buffers})
    ddp.register_comm_hook(None, sum_gradients_hook)
    return ddp


class StopRequest:
    """A flag raised by SIGTERM / SIGUSR1 (what schedulers send before killing a job): the training
    loop finishes the current step, saves a checkpoint and stops. Use as a context manager; the
    previous handlers are restored on exit. Only the main thread can install handlers: elsewhere
    the request does nothing."""

    def __init__(self, signals: Sequence[int] = ()):
        self.signals = tuple(signals)
        self.received: Optional[int] = None
        self._previous = {}

    def __bool__(self) -> bool:
        return self.received is not None

    def _handler(self, signum, frame):
        self.received = signum

    def __enter__(self) -> "StopRequest":
        for s in self.signals:
            try:
                self._previous[s] = signal.signal(s, self._handler)
            except ValueError:  # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous.clear()
        return False

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""
