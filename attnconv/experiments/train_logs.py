"""Rank 0's optional logs beside a run's history: ``steps.csv`` / ``epochs.csv`` and TensorBoard
scalars (``python -m attnconv.train --csv / --tensorboard DIR``)."""

from __future__ import annotations

from pathlib import Path

from .store import EPOCHS_CSV, STEPS_CSV

__all__ = ["RunLogs"]


class RunLogs:
    """Rank 0's optional logs beside the history: ``steps.csv`` / ``epochs.csv`` (``csv``) and
    TensorBoard scalars (``tensorboard``: a folder; needs the ``tensorboard`` package)."""

    def __init__(
        self,
        run_dir: Path,
        csv: bool,
        tensorboard,
        resumed_step: int,
        resumed_epoch: int,
    ):
        self.steps = self.epochs = self.tb = None
        if csv:
            self.steps = self._open(
                run_dir / STEPS_CSV, "step,epoch,loss,lr", resumed_step
            )
            self.epochs = self._open(
                run_dir / EPOCHS_CSV,
                "epoch,train_loss,train_acc,test_loss,test_acc,lr,seconds",
                resumed_epoch,
            )
        if tensorboard is not None:
            from torch.utils.tensorboard import (
                SummaryWriter,  # ImportError without the package: the CLI says so
            )

            self.tb = SummaryWriter(
                str(tensorboard), purge_step=resumed_step + 1 if resumed_step else None
            )

    @staticmethod
    def _open(path: Path, header: str, keep: int):
        """Open for appending, keeping only the rows of the steps (epochs) ``<= keep`` (what the
        checkpoint holds: rows of steps after it, from a crashed run, are dropped)."""
        rows = []
        if keep and path.is_file():
            for line in path.read_text().splitlines()[1:]:
                key = line.split(",", 1)[0]
                if key.isdigit() and int(key) <= keep:
                    rows.append(line)
        f = open(path, "w")
        f.write("\n".join([header] + rows) + "\n")
        f.flush()
        return f

    def step(self, global_step: int, epoch: int, loss: float, lr: float):
        if self.steps is not None:
            self.steps.write(f"{global_step},{epoch},{loss!r},{lr!r}\n")
            self.steps.flush()
        if self.tb is not None:
            self.tb.add_scalar("train/step_loss", loss, global_step)
            self.tb.add_scalar("train/lr", lr, global_step)

    def epoch(self, record: dict, global_step: int):
        if self.epochs is not None:
            self.epochs.write(
                ",".join(
                    repr(record[k])
                    for k in (
                        "epoch",
                        "train_loss",
                        "train_acc",
                        "test_loss",
                        "test_acc",
                        "lr",
                        "seconds",
                    )
                )
                + "\n"
            )
            self.epochs.flush()
        if self.tb is not None:
            for k in ("train_loss", "train_acc", "test_loss", "test_acc"):
                self.tb.add_scalar(f"epoch/{k}", record[k], global_step)
            self.tb.flush()

    def close(self):
        for f in (self.steps, self.epochs):
            if f is not None:
                f.close()
        if self.tb is not None:
            self.tb.close()
