import torch

torch.set_num_threads(1)


def synthetic_cifar(n_train: int, n_test: int, seed: int = 0):
    """Random uint8 images and labels in the shape of CIFAR-10, for fast training tests."""
    from attnconv.experiments.data import CifarData

    g = torch.Generator().manual_seed(seed)
    return CifarData(
        torch.randint(0, 256, (n_train, 3, 32, 32), dtype=torch.uint8, generator=g),
        torch.randint(0, 10, (n_train,), generator=g),
        torch.randint(0, 256, (n_test, 3, 32, 32), dtype=torch.uint8, generator=g),
        torch.randint(0, 10, (n_test,), generator=g),
        source="synthetic",
        note="Data: synthetic test images.",
    )
