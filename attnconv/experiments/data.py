"""CIFAR-10 for the paper's Sec. 4 experiments: loading, normalisation, augmentation, batching.

The whole data set is kept in memory as ``uint8`` tensors ``(N, 3, 32, 32)`` (150 MB for the full
training set), moved once to the training device; augmentation and normalisation run on batches
there, so a GPU run never waits on a data loader.

Data sources, in the order :func:`load_cifar10` tries them with ``source="auto"``:

1. the full CIFAR-10 through :class:`torchvision.datasets.CIFAR10` under ``root`` (default
   ``~/.cache/attnconv/cifar10``, or ``$ATTNCONV_DATA_ROOT``; downloaded if absent and
   ``download=True``, by :func:`fetch_cifar10`: progress on stderr, a timeout, once per data root
   under a file lock, so that the processes of one machine, or of machines sharing the folder,
   download it once; a distributed trainer calls it before any barrier);
2. the bundled sample ``attnconv/data/cifar10-sample.npz``: the first 1,017 images of each official
   training batch (5,085 images) and of the test batch (1,017 images), see ``data/README.md``.

Every load prints one line saying which data the run uses. If neither source can be had,
:class:`DataUnavailableError` says what to do.

Pre-processing as in the authors' code (epfml/attention-cnn): normalisation with mean
(0.4914, 0.4822, 0.4465) and std (0.2023, 0.1994, 0.2010); training augmentation by a random
32×32 crop of the image zero-padded by 4 pixels, then a random horizontal flip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "CIFAR10_CLASSES",
    "SAMPLE_PATH",
    "CIFAR10_TRAIN_IMAGES",
    "DataUnavailableError",
    "CifarData",
    "default_data_root",
    "DATA_SOURCES",
    "CIFAR10_URL",
    "CIFAR10_MD5",
    "CIFAR10_FOLDER",
    "DOWNLOAD_TIMEOUT_S",
    "cifar10_present",
    "fetch_cifar10",
    "load_cifar10",
    "load_cifar10_full",
    "load_cifar10_sample",
    "normalize",
    "augmentation_draws",
    "crop_flip",
    "random_crop_flip",
    "iterate_batches",
]

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
SAMPLE_PATH = Path(__file__).resolve().parents[1] / "data" / "cifar10-sample.npz"
#: Training images in the full CIFAR-10 (the paper's training set; the sample holds a tenth).
CIFAR10_TRAIN_IMAGES = 50_000


class DataUnavailableError(RuntimeError):
    """Neither the full CIFAR-10 nor the bundled sample could be loaded."""


@dataclass
class CifarData:
    """CIFAR-10 images as ``uint8`` tensors ``(N, 3, 32, 32)`` (CHW, RGB) and ``int64`` labels.

    ``source`` is ``"full"`` or ``"sample"``; ``note`` is the line printed when it was loaded.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: Tuple[str, ...] = CIFAR10_CLASSES
    source: str = "sample"
    note: str = ""

    def __post_init__(self):
        for name in ("x_train", "x_test"):
            x = getattr(self, name)
            if x.ndim != 4 or x.shape[1] != 3 or x.dtype != torch.uint8:
                raise ValueError(
                    f"{name} must be a uint8 (N, 3, H, W) tensor, got {x.dtype} {tuple(x.shape)}"
                )
        if len(self.x_train) != len(self.y_train) or len(self.x_test) != len(
            self.y_test
        ):
            raise ValueError("images and labels differ in length")

    def subset(
        self, train: Optional[int] = None, test: Optional[int] = None
    ) -> "CifarData":
        """The first ``train`` training and ``test`` test images (all when ``None``)."""
        for n in (train, test):
            if n is not None and n < 1:
                raise ValueError(f"subset sizes must be >= 1, got {n}")
        return CifarData(
            self.x_train[:train],
            self.y_train[:train],
            self.x_test[:test],
            self.y_test[:test],
            self.classes,
            self.source,
            self.note,
        )

    def split_validation(self, n: int) -> Tuple["CifarData", "CifarData"]:
        """``(rest, validation)``: the last ``n`` training images as a validation set (returned
        as the *test* images of a second :class:`CifarData`, so that everything that evaluates on
        a test set evaluates on it), and the data without them."""
        if not 0 < n < len(self.x_train):
            raise ValueError(
                f"validation must hold 1 to {len(self.x_train) - 1} of the "
                f"{len(self.x_train):,} training images, got {n}"
            )
        cut = len(self.x_train) - n
        rest = CifarData(
            self.x_train[:cut],
            self.y_train[:cut],
            self.x_test,
            self.y_test,
            self.classes,
            self.source,
            self.note,
        )
        held = CifarData(
            self.x_train[:0],
            self.y_train[:0],
            self.x_train[cut:],
            self.y_train[cut:],
            self.classes,
            self.source,
            f"validation: training images {cut:,}-{len(self.x_train) - 1:,}",
        )
        return rest, held

    def to(self, device) -> "CifarData":
        """The same data on ``device`` (still ``uint8``)."""
        return CifarData(
            self.x_train.to(device),
            self.y_train.to(device),
            self.x_test.to(device),
            self.y_test.to(device),
            self.classes,
            self.source,
            self.note,
        )


def default_data_root() -> Path:
    """``$ATTNCONV_DATA_ROOT`` if set, else ``~/.cache/attnconv/cifar10``."""
    env = os.environ.get("ATTNCONV_DATA_ROOT")
    return (
        Path(env).expanduser()
        if env
        else Path.home() / ".cache" / "attnconv" / "cifar10"
    )


def _hwc_to_tensor(x: np.ndarray) -> torch.Tensor:
    x = np.asarray(x)
    if x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise ValueError(f"expected uint8 images (N, H, W, 3), got {x.dtype} {x.shape}")
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def load_cifar10_sample(path=None) -> CifarData:
    """The bundled sample (5,085 training and 1,017 test images, an exact prefix of CIFAR-10)."""
    path = Path(path) if path is not None else SAMPLE_PATH
    if not path.is_file():
        raise FileNotFoundError(f"CIFAR-10 sample not found at {path}")
    with np.load(path, allow_pickle=False) as d:
        data = CifarData(
            _hwc_to_tensor(d["x_train"]),
            torch.from_numpy(d["y_train"].astype(np.int64)),
            _hwc_to_tensor(d["x_test"]),
            torch.from_numpy(d["y_test"].astype(np.int64)),
            tuple(str(c) for c in d["classes"]),
            "sample",
        )
    data.note = (
        f"Data: the bundled CIFAR-10 sample ({len(data.x_train):,} training / {len(data.x_test):,} test "
        f"images), not the full data set."
    )
    return data


#: The data sources (``CifarData.source``, a history's ``data``: what a run trained on) that each
#: ``data`` setting of a run allows: ``auto`` takes the full set, else falls back to the sample.
DATA_SOURCES = {"auto": ("full", "sample"), "full": ("full",), "sample": ("sample",)}

#: Where torchvision's CIFAR-10 comes from, its archive's MD5, and the folder it unpacks to (the
#: values of :class:`torchvision.datasets.CIFAR10`).
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR10_FOLDER = "cifar-10-batches-py"
_CIFAR10_FILES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)
#: Seconds a download may wait for the server before it gives up (per connection and per read:
#: a stalled transfer fails instead of hanging); the whole download is also limited to
#: ``DOWNLOAD_DEADLINE_S``.
DOWNLOAD_TIMEOUT_S = 60.0
DOWNLOAD_DEADLINE_S = 1800.0
_LOCK = ".download.lock"


def cifar10_present(root=None) -> bool:
    """Whether ``root`` (default :func:`default_data_root`) holds the unpacked CIFAR-10 (the six
    batch files of ``cifar-10-batches-py``); their checksums are torchvision's to check."""
    root = Path(root).expanduser() if root is not None else default_data_root()
    return all((root / CIFAR10_FOLDER / f).is_file() for f in _CIFAR10_FILES)


class _FileLock:
    """An exclusive ``flock`` on ``path`` (a no-op where ``fcntl`` is missing); prints once when it
    has to wait for another process."""

    def __init__(self, path: Path, what: str):
        self.path, self.what, self.handle = path, what, None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print(
                f"waiting for another process to finish {self.what} ({self.path})",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
        return False


def _download(url: str, dest: Path, timeout: float, deadline: float, progress: bool):
    """Stream ``url`` into ``dest`` with a progress bar on stderr; ``TimeoutError`` past the
    deadline, ``socket.timeout`` (an ``OSError``) when the server stalls for ``timeout`` s."""
    from tqdm.auto import tqdm

    start = time.monotonic()
    with (
        urllib.request.urlopen(url, timeout=timeout) as response,
        open(dest, "wb") as f,
    ):
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc=f"downloading {url.rsplit('/', 1)[-1]}",
            file=sys.stderr,
            disable=not progress,
            mininterval=1.0,
        ) as bar:
            while chunk := response.read(1 << 20):
                f.write(chunk)
                bar.update(len(chunk))
                if time.monotonic() - start > deadline:
                    raise TimeoutError(f"the download took more than {deadline:.0f} s")


def fetch_cifar10(
    root=None,
    url: str = CIFAR10_URL,
    md5: str = CIFAR10_MD5,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    deadline: float = DOWNLOAD_DEADLINE_S,
    progress: bool = True,
) -> Path:
    """Make sure the full CIFAR-10 is unpacked under ``root`` (default :func:`default_data_root`)
    and return that folder: nothing to do when it is there; else download ``url`` (progress on
    stderr, ``timeout`` seconds per stalled read, ``deadline`` for the whole), check its MD5 and
    unpack it. Only one process per data root downloads: the others wait on a file lock in
    ``root`` and then find the data. A distributed trainer calls this on every process (or each
    machine's first) *before* its first barrier, so that a long download cannot exceed the
    process group's timeout. Raises ``RuntimeError`` with the reason when it cannot be had."""
    root = Path(root).expanduser() if root is not None else default_data_root()
    if cifar10_present(root):
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _FileLock(root / _LOCK, "the CIFAR-10 download"):
            if cifar10_present(root):  # another process downloaded it meanwhile
                return root
            archive = root / url.rsplit("/", 1)[-1]
            part = archive.with_name(archive.name + ".part")
            print(f"downloading CIFAR-10 into {root}", file=sys.stderr, flush=True)
            _download(url, part, timeout, deadline, progress)
            digest = hashlib.md5(part.read_bytes()).hexdigest()
            if digest != md5:
                part.unlink()
                raise RuntimeError(
                    f"the downloaded archive is damaged (MD5 {digest}, expected {md5})"
                )
            os.replace(part, archive)
            unpacking = root / (CIFAR10_FOLDER + ".unpacking")
            shutil.rmtree(unpacking, ignore_errors=True)
            with tarfile.open(archive, "r:gz") as tar:
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(unpacking, **safe)
            shutil.rmtree(root / CIFAR10_FOLDER, ignore_errors=True)
            os.replace(unpacking / CIFAR10_FOLDER, root / CIFAR10_FOLDER)
            shutil.rmtree(unpacking, ignore_errors=True)
            archive.unlink()
    except (
        OSError,
        tarfile.TarError,
        KeyError,
    ) as e:  # no network, timeout, disk full ...
        raise RuntimeError(
            f"could not download CIFAR-10 into {root}: {type(e).__name__}: {e}"
        ) from e
    if not cifar10_present(root):
        raise RuntimeError(f"the CIFAR-10 archive did not unpack into {root}")
    return root


def load_cifar10_full(root=None, download: bool = True) -> CifarData:
    """The full CIFAR-10 (50,000 / 10,000 images) through torchvision, downloaded into ``root``
    by :func:`fetch_cifar10` if absent and ``download``. Raises ``RuntimeError``/``OSError`` when
    it cannot be had."""
    from torchvision.datasets import CIFAR10

    root = Path(root).expanduser() if root is not None else default_data_root()
    sets = {}
    for train in (True, False):
        try:
            sets[train] = CIFAR10(str(root), train=train, download=False)
        except RuntimeError:
            if not download:
                raise
            fetch_cifar10(root)
            sets[train] = CIFAR10(str(root), train=train, download=False)
    tr, te = sets[True], sets[False]
    data = CifarData(
        _hwc_to_tensor(tr.data),
        torch.as_tensor(tr.targets, dtype=torch.int64),
        _hwc_to_tensor(te.data),
        torch.as_tensor(te.targets, dtype=torch.int64),
        tuple(tr.classes),
        "full",
    )
    data.note = f"Data: the full CIFAR-10 ({len(data.x_train):,} training / {len(data.x_test):,} test images) from {root}."
    return data


def load_cifar10(
    source: str = "auto",
    root=None,
    download: bool = True,
    sample_path=None,
    verbose: bool = True,
) -> CifarData:
    """Load CIFAR-10 and print one line saying which data the run uses.

    Args:
        source: ``"full"`` (torchvision only), ``"sample"`` (the bundled sample only) or ``"auto"``
            (the full set, else the sample when the full set is absent and cannot be downloaded).
        root: folder of the torchvision data set (default :func:`default_data_root`).
        download: let torchvision try to download the full set.
        sample_path: the sample ``.npz`` (default :data:`SAMPLE_PATH`, shipped with the package).
        verbose: print the note.

    Raises:
        DataUnavailableError: when no allowed source can be loaded; the message says what to do.
    """
    if source not in ("auto", "full", "sample"):
        raise ValueError(f"source must be 'auto', 'full' or 'sample', got {source!r}")
    reasons = []
    data = None
    if source in ("auto", "full"):
        try:
            data = load_cifar10_full(root, download)
        except (RuntimeError, OSError, ImportError) as e:
            reasons.append(f"full CIFAR-10: {e}")
    if data is None and source in ("auto", "sample"):
        try:
            data = load_cifar10_sample(sample_path)
            if reasons:
                data.note += " The full set is absent and could not be downloaded."
        except (OSError, KeyError, ValueError) as e:
            reasons.append(f"bundled sample: {e}")
    if data is None:
        raise DataUnavailableError(
            "No CIFAR-10 data could be loaded ("
            + "; ".join(reasons)
            + "). Either put the "
            "torchvision copy of CIFAR-10 (the folder 'cifar-10-batches-py') under the data root "
            f"({root or default_data_root()}; pass --data-root or set ATTNCONV_DATA_ROOT), allow a "
            "download from a machine with internet access, or reinstall attnconv so that its bundled "
            f"sample {SAMPLE_PATH} is present (source='sample')."
        )
    if verbose:
        print(data.note)
    return data


def normalize(x: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``uint8`` images ``(B, 3, H, W)`` → floats normalised with the CIFAR-10 mean and std."""
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"expected (B, 3, H, W) images, got shape {tuple(x.shape)}")
    x = x.to(dtype)
    if not x.is_floating_point():
        raise ValueError("dtype must be a floating dtype")
    mean = torch.tensor(CIFAR10_MEAN, dtype=dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR10_STD, dtype=dtype, device=x.device).view(1, 3, 1, 1)
    return (x / 255.0 - mean) / std


def augmentation_draws(batch: int, generator: torch.Generator, padding: int = 4):
    """The random numbers of one augmented batch, drawn from ``generator`` in this order:

    ``offsets`` ``(B, 2)``: top and left corner of the crop in the padded image, uniform in
    {0, …, 2·padding}; ``flips`` ``(B,)``: True where the crop is mirrored left-right (p = ½).
    Both live on the generator's device.
    """
    if batch < 0 or padding < 0:
        raise ValueError("batch and padding must be >= 0")
    dev = generator.device
    offsets = torch.randint(
        0, 2 * padding + 1, (batch, 2), generator=generator, device=dev
    )
    flips = torch.rand(batch, generator=generator, device=dev) < 0.5
    return offsets, flips


def crop_flip(
    x: torch.Tensor, offsets: torch.Tensor, flips: torch.Tensor, padding: int = 4
) -> torch.Tensor:
    """Crop each image of ``x`` ``(B, C, H, W)`` at ``offsets`` from its zero-padded copy, then mirror
    where ``flips``: ``out[b, :, r, s] = pad(x)[b, :, i_b + r, j_b + s']`` with s' = s or W−1−s."""
    if x.ndim != 4:
        raise ValueError(f"expected a (B, C, H, W) batch, got shape {tuple(x.shape)}")
    b, _, h, w = x.shape
    if offsets.shape != (b, 2) or flips.shape != (b,):
        raise ValueError("offsets must be (B, 2) and flips (B,)")
    if padding and (offsets.min() < 0 or offsets.max() > 2 * padding):
        raise ValueError(f"offsets must lie in [0, {2 * padding}]")
    dev = x.device
    offsets, flips = offsets.to(dev), flips.to(dev)
    padded = F.pad(x, (padding, padding, padding, padding)) if padding else x
    rows = offsets[:, 0:1] + torch.arange(h, device=dev)  # (B, H)
    cols = offsets[:, 1:2] + torch.arange(w, device=dev)  # (B, W)
    cols = torch.where(flips[:, None], cols.flip(-1), cols)
    bidx = torch.arange(b, device=dev)[:, None, None]
    out = padded[bidx, :, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def random_crop_flip(
    x: torch.Tensor, generator: torch.Generator, padding: int = 4
) -> torch.Tensor:
    """Random crop with zero padding ``padding`` and random horizontal flip of a batch ``(B, 3, 32, 32)``
    (any dtype; applied before normalisation, so the padding is black as in torchvision's
    ``RandomCrop(32, padding=4)``), on the batch's own device. Random numbers come from
    ``generator`` (see :func:`augmentation_draws`)."""
    offsets, flips = augmentation_draws(x.shape[0], generator, padding)
    return crop_flip(x, offsets, flips, padding)


def iterate_batches(
    n: int,
    batch_size: int,
    generator: Optional[torch.Generator] = None,
    shuffle: bool = True,
    drop_last: bool = False,
) -> Iterator[torch.Tensor]:
    """Index batches over ``range(n)``: a permutation drawn from ``generator`` when ``shuffle``."""
    if n < 0 or batch_size < 1:
        raise ValueError("n must be >= 0 and batch_size >= 1")
    order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        yield order[start : start + batch_size]
