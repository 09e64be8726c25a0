"""The book's evidence layer: the confirmatory protocol, frozen in git before the runs that judge
it exist (:mod:`~attnconv.evidence.protocol`), its freeze record (:mod:`~attnconv.evidence.freeze`)
and the rule that turns fresh runs into verdicts (:mod:`~attnconv.evidence.rule`). It sits between
the training engine (:mod:`attnconv.experiments`) and the chapters, which only present what it
decides."""
