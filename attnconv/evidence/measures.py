"""The protocol's measures (:data:`attnconv.evidence.protocol.MEASURES`) of one saved run, and the
per-seed property of each share claim (:data:`PROPERTIES`).

Every measure reads a saved :class:`~attnconv.experiments.store.History` (its last epoch, or its
``initial_attention`` for the null model "untrained") or a study of the run's weights. A Gaussian
head's map is computed here from its definition, eq. (16) of the paper:
p(δ) ∝ exp(−½ (δ − Δ)ᵀ Σ⁻¹ (δ − Δ)) over the 16×16 keys, for the centre query (8, 8).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from .rule import distinct_by_chance, lattice_points_by_chance

__all__ = [
    "GRID",
    "QUERY",
    "key_shifts",
    "gaussian_maps",
    "peaks",
    "attention_distance",
    "condition_numbers",
    "centre_distance",
    "layers",
    "layer_profile",
    "PROPERTIES",
    "CHANCE",
    "grid_chance",
    "overlap_chance",
    "removal_upper_bound",
    "SYMMETRIC_SCORE",
    "NEAR_UNIFORM_TV",
    "learned_maps",
    "not_nearly_uniform",
    "symmetry",
]

#: The token grid of the six-layer arms and the centre query (row, column).
GRID = 16
QUERY = (8, 8)
_LATTICE = {(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)}


def key_shifts(grid: int = GRID, query: Sequence[int] = QUERY) -> torch.Tensor:
    """δ = k − q of every key of a ``grid``×``grid`` grid for ``query``: ``(grid², 2)``, float64."""
    rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    keys = torch.stack([rows.flatten(), cols.flatten()], dim=1).double()
    return keys - torch.tensor(query, dtype=torch.float64)


def gaussian_maps(record: Mapping) -> torch.Tensor:
    """The maps of a layer's Gaussian heads (eq. 16) from their saved centres Δ and Σ⁻¹:
    ``(N_h, grid²)``, each row summing to 1."""
    delta = torch.tensor(record["centers"], dtype=torch.float64).reshape(-1, 1, 2)
    prec = torch.tensor(record["inverse_covariance"], dtype=torch.float64)
    d = key_shifts()[None] - delta  # (N_h, K, 2)
    scores = -0.5 * torch.einsum("hki,hij,hkj->hk", d, prec.reshape(-1, 2, 2), d)
    return torch.softmax(scores, dim=1)


def peaks(record: Mapping) -> Tuple[List[float], List[Tuple[int, int]]]:
    """Each head's largest probability on one key for the centre query, and that key's shift:
    computed (Gaussian heads) or as saved (learned heads: ``peak_probability``, ``peak_shift``)."""
    if "peak_probability" in record:
        shifts = [tuple(int(round(v)) for v in s) for s in record["peak_shift"]]
        return [float(p) for p in record["peak_probability"]], shifts
    maps = gaussian_maps(record)
    top, where = maps.max(dim=1)
    grid = key_shifts()
    shifts = [tuple(int(v) for v in grid[i]) for i in where.tolist()]
    return top.tolist(), shifts


def attention_distance(record: Mapping) -> float:
    """The mean over a layer's Gaussian heads of E‖k − q‖ (tokens) under each head's map."""
    maps = gaussian_maps(record)
    norms = key_shifts().norm(dim=1)
    return float((maps * norms).sum(dim=1).mean())


def centre_distance(record: Mapping) -> float:
    """The mean over a layer's heads of ‖Δ_h‖ (tokens)."""
    centres = torch.tensor(record["centers"], dtype=torch.float64).reshape(-1, 2)
    return float(centres.norm(dim=1).mean())


def condition_numbers(record: Mapping) -> List[float]:
    """λ_max / λ_min of each head's Σ⁻¹ (inf when λ_min ≤ 0)."""
    prec = torch.tensor(record["inverse_covariance"], dtype=torch.float64).reshape(
        -1, 2, 2
    )
    eig = torch.linalg.eigvalsh(prec)
    return [float(hi / lo) if lo > 0 else math.inf for lo, hi in eig.tolist()]


def layers(history, untrained: bool = False) -> List[Mapping]:
    """The layer records after the last epoch (or before any step: the null model)."""
    return history.layer_records(0 if untrained else -1)


def _one_key(record: Mapping, threshold: float) -> List[Tuple[int, int]]:
    """The peak keys of the heads of ``record`` on one key (peak above ``threshold``)."""
    p, shifts = peaks(record)
    return [s for v, s in zip(p, shifts) if v > threshold]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def layer_profile(recs, threshold: float = 0.5) -> Dict[str, Optional[List[float]]]:
    """What the depth claims read in each layer of one run (its layer records, first to last):
    ``attention_distance`` (:func:`attention_distance`; ``None`` for learned heads, whose maps
    are not saved) and ``one_key``, the heads with more than ``threshold`` of their attention on
    one key (:func:`peaks`)."""
    gaussian = all("centers" in r and "inverse_covariance" in r for r in recs)
    return {
        "attention_distance": [attention_distance(r) for r in recs]
        if gaussian
        else None,
        "one_key": [float(len(_one_key(r, threshold))) for r in recs],
    }


# --------------------------------------------------------------------------- per-seed properties
def local_then_far(recs, alt: bool = False) -> bool:
    f = centre_distance if alt else attention_distance
    d = [f(r) for r in recs]
    return _mean(d[2:6]) > _mean(d[0:2])


def grid_layer4(recs, threshold: float = 0.5) -> bool:
    return len(set(_one_key(recs[3], threshold)) & _LATTICE) >= 5


def _qualifying(recs, threshold):
    return [k for k in (_one_key(r, threshold) for r in recs) if len(k) >= 2]


def no_overlap(recs, threshold: float = 0.5) -> bool:
    q = _qualifying(recs, threshold)
    return bool(q) and all(len(set(k)) == len(k) for k in q)


def localized_first(recs, threshold: float = 0.5, high: int = 2) -> bool:
    n = [len(_one_key(r, threshold)) for r in recs]
    return _mean(n[0:2]) > _mean(n[high:6])


def learned_pixels(recs, threshold: float = 0.9) -> bool:
    return any(max(peaks(r)[0]) > threshold for r in recs[0:2])


def learned_matched_lemma(recs, threshold: float = 0.9) -> bool:
    return any(_LATTICE <= set(_one_key(r, threshold)) for r in recs)


def high_layers_deviate(recs, threshold: float = 0.5) -> bool:
    return localized_first(recs, threshold, high=3)


def non_isotropic(recs, threshold: float = 2.0) -> bool:
    return any(c > threshold for r in recs for c in condition_numbers(r))


def non_isotropic_high(recs, threshold: float = 2.0) -> bool:
    n = [sum(c > threshold for c in condition_numbers(r)) for r in recs]
    return sum(n[3:6]) > sum(n[0:3])


#: Share claim → its per-seed property of a run's layer records (``threshold`` or ``alt`` as the
#: claim's alternatives name them).
PROPERTIES: Dict[str, Callable[..., bool]] = {
    "local_then_far": local_then_far,
    "grid_layer4": grid_layer4,
    "no_overlap": no_overlap,
    "localized_first": localized_first,
    "learned_pixels": learned_pixels,
    "learned_matched_lemma": learned_matched_lemma,
    "high_layers_deviate": high_layers_deviate,
    "non_isotropic": non_isotropic,
    "non_isotropic_high": non_isotropic_high,
}


# --------------------------------------------------------------------------- random placement
def grid_chance(recs, threshold: float = 0.5) -> float:
    """The chance that layer 4's heads on one key, placed at random on the 49 shifts with
    |δ|∞ ≤ 3, cover at least 5 lattice points."""
    return lattice_points_by_chance(len(_one_key(recs[3], threshold)), 49)


def overlap_chance(recs, threshold: float = 0.5) -> float:
    """The chance that every qualifying layer's heads on one key, placed at random on the
    (2r+1)² shifts within the layer's largest |δ|∞ = r (r ≥ 1), sit on distinct keys."""
    q = _qualifying(recs, threshold)
    if not q:
        return 0.0
    p = 1.0
    for keys in q:
        r = max(1, max(max(abs(a), abs(b)) for a, b in keys))
        p *= distinct_by_chance(len(keys), (2 * r + 1) ** 2)
    return p


#: Share claim → the chance its property appears by random placement in a run (the claims whose
#: null is "random placement"; the others' null is the untrained model).
CHANCE: Dict[str, Callable[..., float]] = {
    "grid_layer4": grid_chance,
    "no_overlap": overlap_chance,
}


def removal_upper_bound(interval, heads: int, level: float = 0.05) -> Optional[float]:
    """The upper end of a removal cost's interval at the Bonferroni level 1 − ``level``/``heads``
    (two-sided), from the interval's estimate, standard error and degrees of freedom; the cost is
    full − without = −(without − full)."""
    from ..experiments.verdicts import t_quantile

    if interval.se <= 0:
        return -interval.estimate
    t = t_quantile(1 - level / heads / 2, interval.df)
    return -interval.estimate + t * interval.se


# --------------------------------------------------------------------------- maps of the weights
#: A head is *symmetric* about the query (left-right or up-down) when
#: :func:`~attnconv.core.map_measures.mirror_symmetry` is at least this; *nearly uniform* when
#: its map is within :data:`NEAR_UNIFORM_TV` of uniform (total variation).
SYMMETRIC_SCORE = 0.9
NEAR_UNIFORM_TV = 0.25


def learned_maps(run) -> List[torch.Tensor]:
    """The run's saved attention maps per layer (the study of its weights: mean over 100 test
    images, centre query): ``(N_h, H, W)`` each."""
    from ..experiments.studies_maps import run_attention_maps

    return run_attention_maps(run)["layers"]


def not_nearly_uniform(maps: torch.Tensor) -> torch.Tensor:
    """A boolean mask of the heads whose map is not nearly uniform."""
    from ..core.map_measures import distance_to_uniform

    return distance_to_uniform(maps) >= NEAR_UNIFORM_TV


def symmetry(maps: torch.Tensor, axis: str) -> torch.Tensor:
    """Each head's mirror symmetry about the centre query along ``axis``."""
    from ..core.map_measures import mirror_symmetry

    h, w = maps.shape[1:]
    return mirror_symmetry(maps, (h // 2, w // 2), axis)
