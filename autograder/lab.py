"""The lab's API: everything a hidden test (tests_hidden/) takes from the engine, in one module.

tests_hidden/ imports ``autograder.lab`` and no other engine module (tests/kit/test_import_graph.py checks
it), so the engine's other modules may move or split without touching a lab; nothing in the engine imports
this module back. The lab's own facts stay in the lab's files: its parts and titles (tests_hidden/parts.py)
and its inputs (tests_hidden/cases.py: ``AttentionCase``, ``MHACase``, the seeded helpers).

A hidden test, in full (docs/contributing.md, "Writing a hidden test", says more)::

    import pytest
    import torch

    from autograder.lab import expect_equal

    pytestmark = pytest.mark.part("masks")                 # the part: a key of PARTS in tests_hidden/parts.py

    @pytest.mark.points(5)                                 # its points; @pytest.mark.public shows it at once
    def test_causal_mask_for_a_long_sequence(student):     # fixtures: student, reference, staged (PLUGIN)
        \"\"\"Causal mask: right for T = 64\"\"\"             # the first docstring line: its name in reports
        got = student.call("attention.causal_mask", 64).result
        expect_equal(got, torch.ones(64, 64, dtype=torch.bool).tril(), "causal_mask(64)", "mask")

What it holds, by job:

- **The runner's plugin** (``PLUGIN``): tests_hidden/conftest.py registers it (``pytest_plugins = [PLUGIN]``);
  it gives the fixtures ``student`` (the submission, run in the sandbox: ``student.call("module.name",
  *args, kwargs={...})`` returns a reply whose ``.result`` holds plain tensors and numbers), ``reference``
  (``(attention, mha)``, the modules of solution/, in the trusted grader) and ``staged``, and the markers
  ``part(name)``, ``points(n)`` and ``public`` (``PART``, ``POINTS``, ``PUBLIC`` below are the same marks).
- **The comparisons** (autograder/grading/compare.py): ``expect_close`` (within the dtype's tolerance),
  ``expect_equal`` (exact), ``expect_tensor`` (shape and dtype), ``expect_pair`` (an (output, weights)
  reply), ``fail(case, problem, hint)``; ``diagnosed`` names a catalogued mistake, ``describe_value`` and
  ``matrix_figure`` say what came back. Each failure raises ``StudentError``: its message is what the
  student reads. Any other exception in a test is a grader error, never the student's.
- **The replies' failures** (autograder/grading/student.py): ``Failure`` (the call raised in the child),
  ``RuleViolation`` (it used a forbidden built-in), ``StudentError``.
- **The catalogue of named mistakes** (``catalogue``): what a wrong answer most likely is, in the grade's
  words. Add an entry when a test can tell one common bug from the others by its output (so the report
  names it and where the lab covers it), and give it the parts where it lives (``MISTAKE_PARTS`` in
  tests_hidden/parts.py); tests/heavy/test_single_defects.py then plants it alone and checks it loses
  points in those parts only. A test that only checks a property needs no entry.
- **The hints** (autograder/grading/error_hints.py) the reports and the public checks share.
- **The student's own forward** (autograder/grading/own_forward.py): finite differences of the student's
  forward, for gradient tests.
- **The inputs**: ``randn(*shape, seed=, dtype=, scale=)``, the seeded draw the public checks copy (so both
  suites make inputs alike), and ``weighted_sum``, the sandbox's own sum for a vector-Jacobian product.
  A seed is a case's identity: give each new case a seed no other case of the suite uses (grep the
  suite for ``seed=``), a case draws ``seed``, ``seed + 1`` ... for its tensors, so keep new seeds at least
  five apart; never reuse a public case's seed (assignment/tests/cases.py) for a hidden one, or the hidden
  case is one students have seen. Changing a seed changes the inputs, so only do it with the suite's
  totals re-checked (``make validate``).
- **The student's files** (autograder/rules.py): ``read_source`` (a submitted file's text), ``forbidden_calls``
  (the from-scratch rule's findings); ``CONTRACT``, the names of attention.py that a known-good attention
  built from torch's replaces when an MHA test is run again with it (``with_attention_fallback``).
"""
import pytest

from autograder.containment.probes import CONTRACT, weighted_sum
from autograder.grading import catalogue
from autograder.grading.compare import (describe_value, diagnosed, expect_close, expect_equal, expect_pair,
                                        expect_tensor, fail, matrix_figure)
from autograder.grading.error_hints import (DEVICE_HINT, FORWARD_INPUTS_MODIFIED, FORWARD_INPUTS_MODIFIED_HINT,
                                            INPUTS_MODIFIED, INPUTS_MODIFIED_HINT, NO_GRADIENT_HINT, STEP_CACHE_HINT,
                                            STEP_PROJECT_HINT, TILED_MATRIX_BUILT, TILED_MEMORY_HINT, TILED_ROW_0,
                                            TILED_ROW_0_HINT, TILED_SHAPE_HINT, device_ignored)
from autograder.grading.own_forward import (FD_STEP, SHIFT_HINT, directional_mismatch, directions, float_outputs,
                                            grad_outputs_for, projected_difference, shift_all_scores)
from autograder.grading.seeded import randn
from autograder.grading.student import Failure, RuleViolation, StudentError
from autograder.rules import forbidden_calls, read_source

PLUGIN = "autograder.grading.plugin"  # tests_hidden/conftest.py: pytest_plugins = [PLUGIN]

# The marks a hidden test carries (registered by PLUGIN): pytest.mark.part(...) etc. are the same marks.
PART, POINTS, PUBLIC = pytest.mark.part, pytest.mark.points, pytest.mark.public

__all__ = [
    "CONTRACT", "DEVICE_HINT", "FD_STEP", "FORWARD_INPUTS_MODIFIED", "FORWARD_INPUTS_MODIFIED_HINT", "Failure",
    "INPUTS_MODIFIED", "INPUTS_MODIFIED_HINT", "NO_GRADIENT_HINT", "PART", "PLUGIN", "POINTS", "PUBLIC",
    "RuleViolation", "SHIFT_HINT", "STEP_CACHE_HINT", "STEP_PROJECT_HINT", "StudentError", "TILED_MATRIX_BUILT",
    "TILED_MEMORY_HINT", "TILED_ROW_0", "TILED_ROW_0_HINT", "TILED_SHAPE_HINT", "catalogue", "describe_value",
    "device_ignored", "diagnosed", "directional_mismatch", "directions", "expect_close", "expect_equal",
    "expect_pair", "expect_tensor", "fail", "float_outputs", "forbidden_calls", "grad_outputs_for", "matrix_figure",
    "projected_difference", "randn", "read_source", "shift_all_scores", "weighted_sum",
]
