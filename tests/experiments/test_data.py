import hashlib

import numpy as np
import pytest
import torch

import attnconv.experiments.data as data_mod
from attnconv.experiments.data import (
    CIFAR10_MEAN,
    CIFAR10_STD,
    SAMPLE_PATH,
    CifarData,
    DataUnavailableError,
    augmentation_draws,
    crop_flip,
    iterate_batches,
    load_cifar10,
    load_cifar10_sample,
    normalize,
    random_crop_flip,
)


def test_bundled_sample_is_the_documented_file():
    digest = hashlib.sha256(SAMPLE_PATH.read_bytes()).hexdigest()
    assert digest == "f4288f5eba6539ae9364bd70508941e1544f02297aba3b94cd60ca94a0f4e179"
    assert (SAMPLE_PATH.parent / "README.md").is_file()


def test_sample_shapes_labels_and_layout():
    d = load_cifar10_sample()
    assert d.source == "sample"
    assert d.x_train.shape == (5085, 3, 32, 32) and d.x_train.dtype == torch.uint8
    assert d.x_test.shape == (1017, 3, 32, 32)
    assert d.y_train.dtype == torch.int64 and len(d.y_train) == 5085
    assert d.y_test[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]  # data/README.md
    assert d.classes[6] == "frog" and d.classes[9] == "truck"
    assert d.y_train[:2].tolist() == [
        6,
        9,
    ]  # the frog and the truck opening data_batch_1
    raw = np.load(SAMPLE_PATH)["x_train"][0]  # HWC
    assert torch.equal(d.x_train[0].permute(1, 2, 0), torch.from_numpy(raw))


def test_auto_falls_back_to_the_sample_with_a_note(tmp_path, capsys):
    d = load_cifar10("auto", root=tmp_path / "absent", download=False)
    out = capsys.readouterr().out
    assert d.source == "sample"
    assert "bundled CIFAR-10 sample" in out and "could not be downloaded" in out


def test_sample_source_prints_which_data(capsys):
    d = load_cifar10("sample")
    assert d.source == "sample"
    assert capsys.readouterr().out.strip() == d.note
    load_cifar10("sample", verbose=False)
    assert capsys.readouterr().out == ""


def test_full_source_through_torchvision(monkeypatch, tmp_path):
    class FakeCIFAR10:
        def __init__(self, root, train, download):
            n = 6 if train else 4
            self.data = (
                np.arange(n * 32 * 32 * 3, dtype=np.int64)
                .reshape(n, 32, 32, 3)
                .astype(np.uint8)
            )
            self.targets = list(range(n))
            self.classes = list(data_mod.CIFAR10_CLASSES)

    import torchvision.datasets

    monkeypatch.setattr(torchvision.datasets, "CIFAR10", FakeCIFAR10)
    d = load_cifar10("auto", root=tmp_path, verbose=False)
    assert (
        d.source == "full"
        and d.x_train.shape == (6, 3, 32, 32)
        and d.x_test.shape == (4, 3, 32, 32)
    )
    fake = FakeCIFAR10(None, True, False)
    assert torch.equal(d.x_train[2], torch.from_numpy(fake.data[2]).permute(2, 0, 1))
    assert d.y_test.tolist() == [0, 1, 2, 3]


def test_no_data_at_all_is_a_clear_error(monkeypatch, tmp_path):
    def no_full(root, download):
        raise RuntimeError("no network")

    monkeypatch.setattr(data_mod, "load_cifar10_full", no_full)
    with pytest.raises(DataUnavailableError, match="data-root") as e:
        load_cifar10("auto", root=tmp_path, sample_path=tmp_path / "missing.npz")
    assert "no network" in str(e.value) and "sample" in str(e.value)
    with pytest.raises(DataUnavailableError):
        load_cifar10("full", root=tmp_path)
    with pytest.raises(DataUnavailableError):
        load_cifar10("sample", sample_path=tmp_path / "missing.npz")
    with pytest.raises(ValueError):
        load_cifar10("imagenet")


def test_normalize_matches_formula():
    x = torch.randint(0, 256, (2, 3, 4, 5), dtype=torch.uint8)
    y = normalize(x)
    for c in range(3):
        expect = (x[:, c].double() / 255 - CIFAR10_MEAN[c]) / CIFAR10_STD[c]
        assert torch.allclose(y[:, c].double(), expect, atol=1e-5)
    with pytest.raises(ValueError):
        normalize(torch.zeros(3, 32, 32, dtype=torch.uint8))


def loop_crop_flip(x, offsets, flips, p):
    out = torch.empty_like(x)
    b, c, h, w = x.shape
    for n in range(b):
        canvas = torch.zeros(c, h + 2 * p, w + 2 * p, dtype=x.dtype)
        canvas[:, p : p + h, p : p + w] = x[n]
        i, j = int(offsets[n, 0]), int(offsets[n, 1])
        for r in range(h):
            for s in range(w):
                src = w - 1 - s if flips[n] else s
                out[n, :, r, s] = canvas[:, i + r, j + src]
    return out


def test_crop_flip_matches_plain_loop():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 256, (6, 3, 32, 32), dtype=torch.uint8, generator=g)
    got = random_crop_flip(x, torch.Generator().manual_seed(7))
    offsets, flips = augmentation_draws(6, torch.Generator().manual_seed(7))
    assert torch.equal(got, loop_crop_flip(x, offsets, flips, 4))
    xf = x.float()
    assert torch.equal(
        crop_flip(xf, offsets, flips), loop_crop_flip(xf, offsets, flips, 4)
    )


def test_augmentation_draws_cover_all_crops_and_flip_half():
    offsets, flips = augmentation_draws(4000, torch.Generator().manual_seed(0))
    assert offsets.min() == 0 and offsets.max() == 8
    assert set(offsets[:, 0].tolist()) == set(range(9))
    assert 0.45 < flips.float().mean() < 0.55
    x = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)
    centre = torch.full((2, 2), 4)
    assert torch.equal(crop_flip(x, centre, torch.tensor([False, False])), x)
    assert torch.equal(crop_flip(x, centre, torch.tensor([True, True])), x.flip(-1))


def test_crop_flip_errors():
    x = torch.zeros(2, 3, 8, 8)
    with pytest.raises(ValueError):
        crop_flip(
            x[0], torch.zeros(2, 2, dtype=torch.long), torch.zeros(2, dtype=torch.bool)
        )
    with pytest.raises(ValueError):
        crop_flip(
            x, torch.zeros(3, 2, dtype=torch.long), torch.zeros(2, dtype=torch.bool)
        )
    with pytest.raises(ValueError):
        crop_flip(x, torch.full((2, 2), 9), torch.zeros(2, dtype=torch.bool))


def test_iterate_batches():
    g = torch.Generator().manual_seed(1)
    batches = list(iterate_batches(23, 5, g))
    assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
    assert sorted(torch.cat(batches).tolist()) == list(range(23))
    again = list(iterate_batches(23, 5, torch.Generator().manual_seed(1)))
    assert all(torch.equal(a, b) for a, b in zip(batches, again))
    assert torch.cat(list(iterate_batches(7, 3, shuffle=False))).tolist() == list(
        range(7)
    )
    assert [len(b) for b in iterate_batches(23, 5, g, drop_last=True)] == [5] * 4
    with pytest.raises(ValueError):
        list(iterate_batches(5, 0))


def test_cifar_data_subset_and_validation():
    d = CifarData(
        torch.zeros(10, 3, 32, 32, dtype=torch.uint8),
        torch.arange(10),
        torch.zeros(4, 3, 32, 32, dtype=torch.uint8),
        torch.arange(4),
    )
    s = d.subset(3, 2)
    assert len(s.x_train) == 3 and len(s.y_test) == 2
    with pytest.raises(ValueError):
        d.subset(0)
    with pytest.raises(ValueError):
        CifarData(
            torch.zeros(10, 32, 32, 3, dtype=torch.uint8),
            torch.arange(10),
            d.x_test,
            d.y_test,
        )
    with pytest.raises(ValueError):
        CifarData(d.x_train, torch.arange(9), d.x_test, d.y_test)


# --------------------------------------------------------------------------- the download
def fake_archive(tmp_path):
    """A tar.gz laid out like CIFAR-10's (six batch files under cifar-10-batches-py) and its MD5."""
    import tarfile

    src = tmp_path / "src" / data_mod.CIFAR10_FOLDER
    src.mkdir(parents=True)
    for name in data_mod._CIFAR10_FILES:
        (src / name).write_bytes(name.encode() * 100)
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname=data_mod.CIFAR10_FOLDER)
    return archive, hashlib.md5(archive.read_bytes()).hexdigest()


def test_fetch_downloads_once_with_progress_and_checks_the_archive(tmp_path, capsys):
    archive, md5 = fake_archive(tmp_path)
    root = tmp_path / "root"
    assert not data_mod.cifar10_present(root)
    got = data_mod.fetch_cifar10(root, url=archive.as_uri(), md5=md5)
    err = capsys.readouterr().err
    assert got == root and data_mod.cifar10_present(root)
    assert (
        f"downloading CIFAR-10 into {root}" in err and "cifar-10-python.tar.gz" in err
    )
    assert sorted(p.name for p in root.iterdir()) == [
        ".download.lock",
        "cifar-10-batches-py",
    ]
    # present: no second download (an unreachable URL is not even tried)
    data_mod.fetch_cifar10(root, url="http://127.0.0.1:9/none.tar.gz", md5=md5)
    assert capsys.readouterr().err == ""
    with pytest.raises(RuntimeError, match="damaged"):
        data_mod.fetch_cifar10(tmp_path / "other", url=archive.as_uri(), md5="0" * 32)
    assert not list((tmp_path / "other").glob("*.tar.gz*"))


def test_fetch_has_a_timeout_and_a_one_line_reason(tmp_path, monkeypatch):
    import socket

    seen = {}

    def stalled(url, timeout=None):
        seen["timeout"] = timeout
        raise socket.timeout("timed out")

    monkeypatch.setattr(data_mod.urllib.request, "urlopen", stalled)
    with pytest.raises(
        RuntimeError, match="could not download CIFAR-10 into .*timed out"
    ):
        data_mod.fetch_cifar10(tmp_path, progress=False)
    assert seen["timeout"] == data_mod.DOWNLOAD_TIMEOUT_S > 0
    # load_cifar10 ("auto") then falls back to the sample and says so
    d = load_cifar10("auto", root=tmp_path, verbose=False)
    assert d.source == "sample" and "could not be downloaded" in d.note


def test_fetch_waits_for_the_process_that_downloads(tmp_path, monkeypatch, capsys):
    """A second process (here a thread with its own lock handle) waits on the file lock and then
    finds the data the first one unpacked, without downloading."""
    import threading

    archive, md5 = fake_archive(tmp_path)
    root = tmp_path / "root"

    def no_network(*a, **k):
        raise AssertionError("the waiting process downloaded")

    monkeypatch.setattr(data_mod.urllib.request, "urlopen", no_network)
    with data_mod._FileLock(root / ".download.lock", "a test"):
        outcome = []
        waiter = threading.Thread(
            target=lambda: outcome.append(data_mod.fetch_cifar10(root, md5=md5))
        )
        waiter.start()
        waiter.join(1.0)
        assert waiter.is_alive()  # blocked on the lock
        import tarfile

        with tarfile.open(archive) as tar:  # the first process unpacks meanwhile
            tar.extractall(root)
    waiter.join(10)
    assert not waiter.is_alive() and outcome == [root]
    assert "waiting for another process to finish the CIFAR-10 download" in (
        capsys.readouterr().err
    )
