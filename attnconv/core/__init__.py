"""Layer 1 — the paper's mathematics as reusable PyTorch (no CIFAR-10, no figures).

* :mod:`.grid` — token grids and the relative shifts δ = k − q (Secs. 2.2, 2.3);
* :mod:`.encodings` — positional encodings: absolute (eq. 3), quadratic (eq. 9), generalized
  quadratic (eq. 16), learned relative (Secs. 2.3, 4.3), one-hot shifts (Lemma 1);
* :mod:`.softmax` — the softmax of eq. (4) without denormal probabilities;
* :mod:`.attention` — multi-head self-attention with the relative scores of eq. (8);
* :mod:`.local` — local Gaussian attention (windows from a proven bound);
* :mod:`.conv` — convolution → attention (Lemma 1, Theorem 1);
* :mod:`.bounds` — how large α must be for one-hot heads (Lemma 2);
* :mod:`.lattice` — distances of heads to Lemma 1's lattice of kernel shifts;
* :mod:`.metrics` — relative errors.
"""
