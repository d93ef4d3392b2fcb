"""The hidden suite's fixtures come from the grader's plugin: `student`, `reference`, `staged`."""
from autograder.lab import PLUGIN

pytest_plugins = [PLUGIN]
