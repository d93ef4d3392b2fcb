"""Where the kit is: the folder that holds autograder/, tests_hidden/, solution/ and grading.yaml; and its hidden suite.

Standard library only, so that every module (the zygote's and the child's included) can import it.
"""
import os

KIT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDDEN_TESTS = os.path.join(KIT_ROOT, "tests_hidden")  # the hidden suite, graded and counted
