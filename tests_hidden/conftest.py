"""The hidden suite's fixtures come from the grader's plugin: `student`, `reference`, `staged`."""
pytest_plugins = ["autograder.grading.plugin"]
