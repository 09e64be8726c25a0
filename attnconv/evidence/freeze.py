"""The freeze record of the confirmatory protocol (:mod:`attnconv.evidence.protocol`).

:data:`FROZEN_DIGEST` is the SHA-256 of the protocol's content when it was frozen; the commit that
froze it is :data:`FREEZE_COMMIT` (written in the commit after it: a commit cannot name itself).
``tests/evidence/test_freeze.py`` fails when the content differs from the frozen one, and when a
confirmatory run or result (:data:`GUARDED_PATHS`) entered git in or before the freeze commit.
"""

__all__ = [
    "FROZEN_DIGEST",
    "FREEZE_COMMIT",
    "FREEZE_DATE",
    "GUARDED_PATHS",
    "PROTOCOL_RUN_FOLDERS",
    "FOLLOWUP_DIGEST",
    "FOLLOWUP_FREEZE_COMMIT",
    "FOLLOWUP_FREEZE_DATE",
    "FOLLOWUP_GUARDED_PATHS",
    "FOLLOWUP_AMENDMENT_DIGEST",
    "FOLLOWUP_AMENDMENT_COMMIT",
    "FOLLOWUP_AMENDMENTS",
    "BACKGROUND_PATHS",
]

#: SHA-256 of :func:`attnconv.evidence.protocol.content` at the freeze.
FROZEN_DIGEST = "ad154cde14d30d8aa423311e33e47a7375aacd985bcd15b8e41384a445d50105"
#: The commit that froze the protocol (None until the commit after it names it).
FREEZE_COMMIT = "c73a7a66bf4db5abffb23a0dc14cff2036c2ad06"
#: Its date (UTC), as git records it.
FREEZE_DATE = "2026-11-27T08:44:41+00:00"
#: Where the confirmatory runs and results live (under book/): none of it may be in git at or
#: before the freeze commit.
GUARDED_PATHS = (
    "runs/confirm",
    "runs/confirm-tuning",
    "runs/beyond3",
    "runs/beyond3-tuning",
    "results/confirm",
    "results/beyond3",
)
#: SHA-256 of :func:`attnconv.evidence.followup.content` at the registered follow-up's freeze.
FOLLOWUP_DIGEST = "7e24518c8082fb80df8d6d832ef1b52764b80bc40f8b783ce0405996f7dae0c7"
#: The commit that froze the follow-up (None until the commit after it names it).
FOLLOWUP_FREEZE_COMMIT = "e10d2ddba06ce94fe0566e2d8173588367801963"
#: Its date (UTC), as git records it.
FOLLOWUP_FREEZE_DATE = "2026-11-28T03:16:52+00:00"
#: SHA-256 of :func:`attnconv.evidence.followup.amendment_content` at the follow-up's first
#: amendment (its first six records, with the source of the analysis it fixes), made before any
#: run it changes existed; kept as the record of what that commit fixed.
FOLLOWUP_AMENDMENT_DIGEST = (
    "ce8a9c6a4619b7bb74a8b5abe081ba8528f13c81f0bf6822f0bfa684dd83f658"
)
#: The commit of the first amendment.
FOLLOWUP_AMENDMENT_COMMIT = "5f321360a3b4c3c6f805f68d2f1a9146c60ef4fc"
#: Every amendment of the follow-up in order: (how many records of ``followup.AMENDMENTS`` it
#: covers, the digest of :func:`~attnconv.evidence.followup.amendment_content` then, its commit:
#: None until the commit after it names it). The last digest is the one checked now.
FOLLOWUP_AMENDMENTS = (
    (6, FOLLOWUP_AMENDMENT_DIGEST, FOLLOWUP_AMENDMENT_COMMIT),
    (
        7,
        "81da70d41f6e5c8b5d2cd947133e83b89951714036b1faf015ca5ae8ea84d3ee",
        "225c88e273306a4b3e7dff205c1114773215b9a3",
    ),
    (
        8,
        "0ae9b46bd7ff72e2dafb0f33b1cb7bcdf52b69cfdc42e53d8fc4754586859110",
        "93993917d4c3393b037edf6ff1bae93ef0c997ce",
    ),
)
#: The follow-up's runs and results: none of it may be in git at or before its freeze commit.
FOLLOWUP_GUARDED_PATHS = ("runs/followup", "runs/followup-tuning", "results/followup")
#: Every path the protocol's background runs fill over several sessions (the frozen protocol's and
#: the follow-up's): a registered entry there may be missing from a checkout.
BACKGROUND_PATHS = GUARDED_PATHS + FOLLOWUP_GUARDED_PATHS
#: The protocol's run folders under book/runs/ (the benchmark appendix leaves them to the
#: protocol page, which counts them as they arrive).
PROTOCOL_RUN_FOLDERS = tuple(
    p[len("runs/") :] for p in BACKGROUND_PATHS if p.startswith("runs/")
)
