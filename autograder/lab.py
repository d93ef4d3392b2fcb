"""The lab's API: everything a hidden test (tests_hidden/) takes from the engine, in one module.

tests_hidden/ imports ``autograder.lab`` and no other engine module, and no engine module imports it
(tests/kit/test_import_graph.py), so the engine may move its modules without touching a lab. The lab's
own facts stay in its files: parts and names in tests_hidden/parts.py, inputs in tests_hidden/cases.py.
How to write a test, choose a seed, or add a catalogue entry: docs/contributing.md, "Writing a hidden test".

- ``PLUGIN`` (tests_hidden/conftest.py registers it): the fixtures ``student`` (``student.call("module.name",
  *args)`` runs it in the sandbox; ``.result`` is plain tensors and numbers), ``reference`` and ``staged``, and
  the marks ``pytest.mark.part(name)``, ``pytest.mark.points(n)`` and ``pytest.mark.public``, which it
  registers (so they are written as pytest's: a module of the suite may be imported where they are not).
- The comparisons: ``expect_close``, ``expect_equal``, ``expect_tensor``, ``expect_pair``, ``fail``; each
  failure raises ``StudentError``, whose message the student reads (any other exception is a grader error).
  ``diagnosed`` names a mistake of the ``catalogue``; ``describe_value``, ``matrix_figure`` show a value.
- The replies' failures (``Failure``, ``RuleViolation``; ``replied`` raises the one ``student.call_many`` returned
  for a call), the hints the reports share, the student's own forward for gradient tests, the seeded ``randn``
  (the public checks copy it) and ``weighted_sum`` (the sandbox's vector-Jacobian product), and the submitted
  files (``read_source``, ``forbidden_calls``, ``CONTRACT``: what a known-good attention replaces when an MHA
  test runs again with it).
"""
from autograder.containment.probes import weighted_sum
from autograder.judging import catalogue
from autograder.judging.compare import (FLOAT32_HINT, FLOAT64_DEPARTS, describe_value, diagnosed, expect_close,
                                        expect_equal, expect_pair, expect_tensor, fail, matrix_figure)
from autograder.judging.error_hints import (DEVICE_HINT, FORWARD_INPUTS_MODIFIED, FORWARD_INPUTS_MODIFIED_HINT,
                                            INPUTS_MODIFIED, INPUTS_MODIFIED_HINT, MISMATCH_HINT,
                                            MISMATCH_NOT_RAISED_HINT, PLAIN_VALUE_ERROR_HINT, STEP_CACHE_HINT,
                                            STEP_PROJECT_HINT, TILED_MATRIX_BUILT, TILED_MEMORY_HINT, TILED_ROW_0,
                                            TILED_ROW_0_HINT, TILED_SHAPE_HINT, VALID_SIZE_REFUSED_TOO, device_ignored)
from autograder.grading.oracle import CONTRACT
from autograder.judging.own_forward import (FD_STEP, SHIFT_HINT, directional_mismatch, directions, float_outputs,
                                            grad_outputs_for, not_attention, projected_difference, shift_all_scores)
from autograder.judging.properties import (ATTENTION_STOOD_IN, CONSTRUCTION_STOOD_IN, GRADIENT_ONLY_WRONG,
                                           HEADS_STOOD_IN, TILED_GRADIENT_ONLY_WRONG, WEIGHTS_RIGHT_OUTPUT_WRONG, attention_properties,
                                           bias_not_followed, blocked_weight, calls_differ, forward_already_wrong, decode_steps, dtype_changed, no_gradient, not_a_distribution,
                                           heads_not_merged, mask_constant, padding_followed, rows_not_attention, rows_per_key, sampled_rows, scores_off, size_not_refused, sizes_stored,
                                           step_projections, tiled_blocks, tiled_rows)
from autograder.judging.seeded import randn
from autograder.grading.student import Failure, replied
from autograder.judging.errors import RuleViolation, StudentError
from autograder.rules import forbidden_calls, read_source

PLUGIN = "autograder.grading.plugin"  # tests_hidden/conftest.py: pytest_plugins = [PLUGIN]

__all__ = [
    "CONTRACT", "DEVICE_HINT", "FD_STEP", "FLOAT32_HINT", "FLOAT64_DEPARTS", "FORWARD_INPUTS_MODIFIED", "FORWARD_INPUTS_MODIFIED_HINT", "Failure",
    "INPUTS_MODIFIED", "INPUTS_MODIFIED_HINT", "MISMATCH_HINT", "MISMATCH_NOT_RAISED_HINT", "PLAIN_VALUE_ERROR_HINT", "PLUGIN",
    "RuleViolation", "SHIFT_HINT", "STEP_CACHE_HINT", "STEP_PROJECT_HINT", "StudentError", "TILED_MATRIX_BUILT",
    "TILED_MEMORY_HINT", "TILED_ROW_0", "TILED_ROW_0_HINT", "TILED_SHAPE_HINT", "VALID_SIZE_REFUSED_TOO", "catalogue", "describe_value",
    "device_ignored", "diagnosed", "directional_mismatch", "directions", "expect_close", "expect_equal",
    "expect_pair", "expect_tensor", "fail", "float_outputs", "forbidden_calls", "grad_outputs_for", "matrix_figure",
    "projected_difference", "randn", "read_source", "shift_all_scores", "weighted_sum",
    # the measured properties of a student's own result (issue 47) and the gradients' gate (issue 46)
    "attention_properties", "bias_not_followed", "blocked_weight", "forward_already_wrong", "calls_differ", "dtype_changed", "no_gradient", "not_a_distribution", "not_attention",
    "heads_not_merged", "mask_constant", "padding_followed", "rows_not_attention", "sampled_rows", "rows_per_key", "scores_off", "size_not_refused", "sizes_stored", "tiled_rows", "decode_steps", "step_projections", "tiled_blocks", "GRADIENT_ONLY_WRONG", "TILED_GRADIENT_ONLY_WRONG", "WEIGHTS_RIGHT_OUTPUT_WRONG",
    # one defect, one charge: how a pass on the lab's lower parts is noted (issue 46)
    "ATTENTION_STOOD_IN", "CONSTRUCTION_STOOD_IN", "HEADS_STOOD_IN",
    "replied",  # an item of student.call_many: its reply, or its failure raised (issue 46)
]
