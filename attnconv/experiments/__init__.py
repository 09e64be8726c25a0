"""Layer 2 — the CIFAR-10 experiments of the paper's Sec. 4 (uses :mod:`attnconv.core` only).

* :mod:`.data` — CIFAR-10 and the bundled sample; :mod:`.models` — the paper's models and ResNet18;
* :mod:`.train` — training with checkpoints, resume and a JSON history; :mod:`.train_cli` — its
  command line (``python -m attnconv.train``); :mod:`.profiles` — paper / gpu / cpu settings;
* :mod:`.runs` — saved runs for the chapters and their re-check; :mod:`.flops` — FLOP counts;
* :mod:`.pruning` — degenerate heads (Appendix A.1); :mod:`.bench` — the benchmark;
* :mod:`.registry` — the book's runs; :mod:`.studies` — the book's studies made from them
  (pruning :mod:`.studies_pruning`, removal :mod:`.studies_removal`, attention maps
  :mod:`.studies_maps`, learning a convolution :mod:`.studies_convolve`), made by
  ``python -m attnconv.regenerate``;
* :mod:`.verdicts` — the one rule for a verdict on an experimental claim, and spreads over seeds.
"""
