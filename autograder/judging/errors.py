"""The failure a hidden test raises for the student: its message is meant for the student.

Any other exception a test raises is the grader's own error, reported as such and never charged.
"""


class StudentError(AssertionError):
    """The student's code failed a probe or a comparison; the message is meant for the student.

    ``figure`` (expected and got for one small matrix) and ``mistake`` (a catalogued bug the
    result matches) travel with it into the report.
    """

    def __init__(self, message, figure=None, mistake=None, unnamed=None):
        super().__init__(message)
        self.figure, self.mistake = figure, mistake
        self.unnamed = message if unnamed is None else unnamed  # the message without the mistake's name

    def named(self, mistake):
        """The same failure, with the catalogued mistake named first (in place of one named before)."""
        return StudentError(f"Likely bug: {mistake.explain()}.\n{self.unnamed}", self.figure, mistake, self.unnamed)


class RuleViolation(StudentError):
    """The student's code called a forbidden built-in."""
