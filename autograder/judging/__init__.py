"""Judging: the hidden-test author's library, what a test uses to judge the answers a child returned.

``compare`` compares a result with the expected one (the tolerances, the failure's message and figure),
``catalogue`` names a mistake a wrong result matches, ``properties`` measures what a hint states of the
student's own result (the public checks copy it), ``own_forward`` judges the gradients from the student's own
forward, ``seeded`` makes the inputs, ``error_hints`` says what a torch error usually means, and ``errors``
holds ``StudentError``, the failure whose message the student reads. None of it starts a child or reads a
reply's bytes: it works on plain tensors and numbers the trusted side already holds. The lab reaches it
through ``autograder.lab``.

May import: the shared facts at the top (``parts``) and itself; never containment, grading, reports or
platforms.
"""
