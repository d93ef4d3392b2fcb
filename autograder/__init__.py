"""The grading engine of the Attention from Scratch kit.

Five groups, each a package that says what it may import (tests/kit/test_import_graph.py checks it):
``rule`` (the from-scratch rule, at the bottom: the standard library only, since students run it as
their submit.py), ``containment`` (the sandbox and its channel), ``grading`` (a submission to a record
of every test), ``reports`` (what a grade looks like) and ``platforms`` (Gradescope, nbgrader,
generated files). Here at the top: the entry (``cli``, ``__main__``) and the facts every group shares,
which import nothing from the groups but the rule: ``config`` (grading.yaml), ``paths`` (the kit and its
hidden suite), ``parts`` (the lab's parts and name), ``rules`` (the engine's reading of the rule: what a
submission may import and name), ``bounds`` (how much of a child's text the grader keeps) and ``files``
(the one atomic write). Beside them, ``lab``: the lab's API, the one module tests_hidden/ imports, which
nothing of the engine imports.
"""
