"""The paper's numbers, each written once and tagged with where it is printed (arXiv v1 numbering,
the ICLR 2020 number beside; the texts are in ``shared/papers``).

Values are kept as printed ("12.1M", "93.8%"), so a table can quote them; the code that compares
with them (:func:`attnconv.experiments.models.parameter_count_table`,
:func:`attnconv.experiments.flops.flops_table`, the chapters' tables) reads them from here.

* :data:`PAPER_PARAMETERS`, :data:`PAPER_FLOPS` — size and cost of the paper-size models (v1 Figs. 5
  and 9 = ICLR Table 1 and its App. A.1 table);
* :data:`PAPER_ACCURACY` and :data:`PAPER_TABLE1` — the accuracy table (v1 Fig. 5 = ICLR Table 1);
* :data:`PAPER_FIG9` — the generalized model before and after pruning (v1 Fig. 9);
* :data:`PAPER_PRUNED_PER_LAYER`, :data:`PAPER_PRUNED_HEADS` — the heads pruned (App. A.1);
* :data:`PAPER_MAX_EIGENVALUE_THRESHOLD`, :data:`PAPER_CONDITION_THRESHOLD`,
  :data:`AUTHORS_CODE_CONDITION_THRESHOLD` — App. A.1's degeneracy thresholds (and the authors' code's);
* :data:`PAPER_TABLE2` — the hyper-parameters (App. A.4, Table 2).
"""

from __future__ import annotations

from typing import Dict

__all__ = [
    "PAPER_PARAMETERS",
    "PAPER_FLOPS",
    "PAPER_ACCURACY",
    "PAPER_TABLE1",
    "PAPER_FIG9",
    "PAPER_PRUNED_PER_LAYER",
    "PAPER_PRUNED_HEADS",
    "PAPER_TOTAL_HEADS",
    "PAPER_MAX_EIGENVALUE_THRESHOLD",
    "PAPER_CONDITION_THRESHOLD",
    "AUTHORS_CODE_CONDITION_THRESHOLD",
    "PAPER_TABLE2",
    "SOURCES",
]

#: "# of params" of the paper-size models: v1 Fig. 5 (= ICLR Table 1) and v1 Fig. 9 (generalized and
#: pruned rows). learned_content (29.5M) is ICLR Table 1 only.
PAPER_PARAMETERS: Dict[str, str] = {
    "quadratic": "12.1M",
    "generalized": "12.1M",
    "learned": "12.3M",
    "generalized_pruned": "9.7M",
    "resnet18": "11.2M",
    "learned_content": "29.5M",
}

#: "# of FLOPS" (v1 Figs. 5 and 9; 15B for learned_content is ICLR Table 1 only). Our inference, not
#: stated in the paper: they are 2 × the MACs of the Linear/conv layers.
PAPER_FLOPS: Dict[str, str] = {
    "quadratic": "6.2B",
    "generalized": "6.2B",
    "learned": "6.2B",
    "learned_content": "15B",
    "resnet18": "1.1B",
    "generalized_pruned": "4.9B",
}

#: Test accuracy on CIFAR-10 after 300 epochs: v1 Fig. 5 (= ICLR Table 1; learned_content ICLR only)
#: and v1 Fig. 9 (generalized, before and after pruning).
PAPER_ACCURACY: Dict[str, str] = {
    "resnet18": "93.8%",
    "quadratic": "93.8%",
    "learned": "91.8%",
    "learned_content": "87.1%",
    "generalized": "0.934",
    "generalized_pruned": "0.934",
}

#: Where each row of the accuracy table is printed. The first three rows are arXiv v1 Fig. 5
#: (repeated in v1 Fig. 9), which the ICLR 2020 version calls Table 1; the content model exists only
#: in the ICLR version, as a fourth row of its Table 1 (v1 Sec. 4.3 (iii): "the attention scores are
#: computed using only the relative positions of the pixels and not the data").
SOURCES: Dict[str, str] = {
    "resnet18": "v1 Fig. 5",
    "quadratic": "v1 Fig. 5",
    "learned": "v1 Fig. 5",
    "learned_content": "ICLR Table 1 only",
}

#: The paper's accuracy table (full CIFAR-10, 300 epochs, paper-size models): label, test accuracy,
#: parameters, FLOPs per image and where the row is printed.
PAPER_TABLE1: Dict[str, Dict[str, str]] = {
    name: {
        "label": label,
        "accuracy": PAPER_ACCURACY[name],
        "parameters": PAPER_PARAMETERS[name],
        "flops": PAPER_FLOPS[name],
        "source": SOURCES[name],
    }
    for name, label in (
        ("resnet18", "ResNet18"),
        ("quadratic", "SA quadratic emb."),
        ("learned", "SA learned emb."),
        ("learned_content", "SA learned emb. + content"),
    )
}

#: The generalized and pruned rows of v1 Fig. 9 ("SA quadratic generalized 0.934 12.1M 6.2B",
#: "SA quadratic generalized pruned 0.934 9.7M 4.9B"), before → after pruning.
PAPER_FIG9 = {
    key: (table["generalized"], table["generalized_pruned"])
    for key, table in (
        ("accuracy", PAPER_ACCURACY),
        ("parameters", PAPER_PARAMETERS),
        ("flops", PAPER_FLOPS),
    )
}

#: Heads pruned per layer, first to last, in the 6-layer, 9-head generalized model (App. A.1: "we pruned
#: [2,4,1,2,6,0] heads from the first to the last layer").
PAPER_PRUNED_PER_LAYER = (2, 4, 1, 2, 6, 0)
#: Heads pruned of all heads (App. A.1: 15 of the 6 × 9 = 54).
PAPER_PRUNED_HEADS = sum(PAPER_PRUNED_PER_LAYER)
PAPER_TOTAL_HEADS = 6 * 9

#: App. A.1's degenerate heads: largest eigenvalue of Σ⁻¹ below 1e-5 (non-localised) or condition
#: number above 1e5 (elongated); the authors' code used 1e3 for the condition number.
PAPER_MAX_EIGENVALUE_THRESHOLD = 1e-5
PAPER_CONDITION_THRESHOLD = 1e5
AUTHORS_CODE_CONDITION_THRESHOLD = 1e3

#: App. A.4, Table 2 of arXiv v1, in the paper's order (values as printed; "cosine decay" is a check
#: mark in the paper, lost in the stored text, read here as "yes").
PAPER_TABLE2: Dict[str, object] = {
    "number of layers": 6,
    "number of heads": 9,
    "hidden dimension": 400,
    "intermediate dimension": 512,
    "invertible pooling width": 2,
    "dropout probability": 0.1,
    "layer normalization epsilon": 1e-12,
    "number of epochs": 300,
    "batch size": 100,
    "learning rate": 0.1,
    "weight decay": 0.0001,
    "momentum": 0.9,
    "cosine decay": "yes",
    "linear warm up ratio": 0.05,
}
