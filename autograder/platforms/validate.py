"""``make validate``: the instructor's check after a change to the lab, one line per problem.

    python -m autograder.platforms.validate

It checks that the hidden suite's points and parts agree with the kit's table of parts
(tests_hidden/parts.py, read by autograder/parts.py) and that every part has tests with points; that the reference scores full
marks on the hidden suite (``reference_check``, cached per grader) and the students' stubs
(``assignment/``) import and score 0; and that every generated file is in sync with its source
(``generate --check``). Exit 1 when anything is wrong, after naming each problem.
"""
import sys

from autograder.paths import KIT_ROOT


def part_problems(tests_dir=None):
    """Points and parts: each part of the suite is one the kit knows, and each core part has points."""
    from autograder.grading.suite_points import HIDDEN_TESTS, part_points
    from autograder.parts import EXTRA_PARTS, PARTS, PUBLIC_CHECKS

    try:
        points = part_points(tests_dir or HIDDEN_TESTS)
    except RuntimeError as err:
        return [str(err)]
    problems = [f"tests_hidden: part {part!r} is not in tests_hidden/parts.py's PARTS: add it there, or fix the "
                "module's pytest.mark.part" for part in points if part not in PARTS]
    problems += [f"tests_hidden: part {part!r} has no tests with points" for part in PARTS
                 if part not in EXTRA_PARTS and not points.get(part)]
    problems += [f"tests_hidden/parts.py: PUBLIC_CHECKS names part {part!r}, which is not in PARTS: rename or remove "
                 "it there too" for part in PUBLIC_CHECKS if part not in PARTS]
    return problems


def stub_problems(record):
    """The stubs' graded record: every test fails, and the stubs import (no grader error)."""
    if record.get("grader_error"):
        return [f"assignment/ (the stubs): the grader failed on them: {' '.join(str(record['grader_error']).split())[:300]}"]
    return [f"assignment/ (the stubs): {test['name']} passes on the stubs ({test['points']:g} points)"
            for test in record["tests"] if test["passed"] and test["points"]]


def grading_problems():
    """The reference scores full marks (cached verdict or graded now); the stubs are graded and score 0."""
    import os

    from autograder.config import ConfigError, load_config
    from autograder.containment import isolation
    from autograder.grading.batch import grade_alone, verify_suite
    from autograder.grading.reference_check import SuiteBroken

    try:
        config = load_config()
    except ConfigError as err:
        return [f"grading.yaml: {err}"]
    try:
        verify_suite(config)
    except SuiteBroken as err:
        return [f"the reference: {line}" for line in err.lines]
    return stub_problems(grade_alone(config, isolation.choose_level(), os.path.join(KIT_ROOT, "assignment")))


def generated_problems():
    from autograder.platforms import generate

    return [f"{path.relative_to(generate.ROOT)}: out of sync with its source: run `make stubs`"
            for path in generate.generate(check=True)]


def main(argv=None):
    problems = part_problems() + grading_problems() + generated_problems()
    for line in problems:
        print(line)
    if problems:
        print(f"validate: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("validate: the reference scores full marks, the stubs 0, points and parts agree, generated files in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
