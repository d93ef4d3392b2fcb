"""``make validate``: the instructor's check after a change to the lab, one line per problem.

    python -m autograder.platforms.validate

It checks that the hidden suite's points and parts agree with the kit's table of parts
(tests_hidden/parts.py, read by autograder/parts.py) and that every part has tests with points; that the reference scores full
marks on the hidden suite (``reference_check``, cached per grader) and the students' stubs
(``assignment/``) import and score 0; and that every generated file is in sync with its source
(``generate --check``). Exit 1 when anything is wrong, after naming each problem.

The checks run side by side, for a check in seconds. The command starts itself again with the
allow-listed environment (``restart_with_allow_listed_environment``, below); a first child checks
nbgrader's files (the stubs, the notebook: nbgrader's two preprocessors, imported alone, and no torch)
while this process imports torch once and forks the sandbox's zygote from itself, before it reads
anything of the lab; then a second child checks the other generated files (the figure, matplotlib's
import most of it) while this process reads the suite and grades the reference and the stubs in
forked graders, as ``make grade`` does. Where it cannot restart (no memfd), or when ``main`` is called
in-process, the zygote is exec'd and imports torch while this process does.

Like the reference's verdict, the generated files' verdict "all in sync" is cached, under a digest of
everything that decides it (``generated_key``: solution/, assignment/ and tests_hidden/ whole, the samples'
README, the manifest, the kit's code, the versions of Python and of the packages that render): a run whose inputs
are all unchanged since the files were last found in sync checks nothing again and imports neither
nbgrader nor matplotlib. Any other run checks every file.
"""
import json
import os
import sys
import traceback
from pathlib import Path

from autograder.paths import HIDDEN_TESTS, KIT_ROOT

# What decides whether every generated file is in sync (``generated_key``), relative to the kit: the
# folders whole (sources, targets, strays in assignment/checks/, the lab text) and single files. The
# generator's own code (its templates are in it) is the imported ``autograder`` package, also whole.
GENERATED_FOLDERS = ("solution", "assignment", "tests_hidden")  # the suite: its points are the texts' totals
GENERATED_FILES = ("examples/submissions/README.md", "generated.sha256")
# The packages whose code renders a generated file: nbgrader's ClearSolutions and ClearOutput (on nbconvert's
# preprocessors and traitlets), nbformat (and its schema's jsonschema), matplotlib and what it lays out, draws
# and writes the figure with, torch (the figure's weights, the case table).
GENERATED_BY = ("nbgrader", "nbconvert", "nbformat", "jsonschema", "traitlets", "matplotlib", "numpy", "pillow",
                "kiwisolver", "fonttools", "pyparsing", "cycler", "torch")
CODE = Path(__file__).resolve().parent.parent  # the autograder package: generate.py, lab_figure.py, the grader's tables


def part_problems(tests_dir=None):
    """Points and parts: each part of the suite is one the kit knows, and each core part has points."""
    from autograder.grading.suite_points import part_points
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


def grading_problems(config, zygote, level, layers):
    """The reference scores full marks (cached verdict or graded now); the stubs are graded and score 0.
    Both in forked graders of one engine, side by side, on the ``zygote`` started (with ``level`` and
    ``layers``) by the caller."""
    from autograder.grading import fingerprint, reference_check
    from autograder.grading.batch import grade_forked, start_forked
    from autograder.grading.runner import Engine

    engine = Engine(config, level=level, layers=layers, zygote=zygote, graders=2)  # the suite loaded once, here
    stubs = start_forked(engine, os.path.join(KIT_ROOT, "assignment"), slot=1)  # beside the reference, if graded
    try:
        reference_check.verify(fingerprint.grader_parts(config, level, HIDDEN_TESTS),
                               lambda: grade_forked(engine, fingerprint.REFERENCE_DIR, slot=0))
        broken = []
    except reference_check.SuiteBroken as err:
        broken = [f"the reference: {line}" for line in err.lines]
    return broken + stub_problems(stubs())


def generated_problems(images=None, nbgrader=None):
    """Every generated file that is out of sync (``images``, ``nbgrader``: as ``generate.generate`` takes them)."""
    from autograder.platforms import generate

    return [f"{path.relative_to(generate.ROOT)}: out of sync with its source: run `make stubs`"
            for path in generate.generate(check=True, images=images, nbgrader=nbgrader)]


def nbgrader_problems():
    """nbgrader's generated files (the stubs, the notebook) out of sync, checked in a child process that ends
    after it: with nbgrader's preprocessors imported alone (``generate.import_clearing_preprocessors_only``).
    Needs no torch."""
    from autograder.platforms import generate

    generate.import_clearing_preprocessors_only()
    return generated_problems(images=False, nbgrader=True)


def other_problems():
    """Every other generated file out of sync: the figure (matplotlib), the otter checks, the regions, the lab
    text's tables (torch needed: the case table, the figure's weights)."""
    return generated_problems(images=True) + generated_problems(images=False, nbgrader=False)


def start_generated_checks(with_nbgrader=True):
    """The generated files' checks in forked children, nbgrader's apart (unless ``with_nbgrader`` is false:
    ``early_check`` made it); returns a function per child that waits for its lines. Forked with torch loaded."""
    return ([in_child(nbgrader_problems)] if with_nbgrader else []) + [in_child(other_problems)]


def early_check(environment_fd):
    """In a child forked before torch is imported (``restarted``), beside the parent's torch import: with the
    instructor's environment, {"key": ``generated_key()``, "lines": nbgrader's files out of sync}, or lines
    None when the verdict for that key is cached (nothing checked)."""
    read_environment(environment_fd)
    key = generated_key()
    return {"key": key, "lines": None if generated_in_sync_known(key) else nbgrader_problems()}


def generated_key(root=None, code=CODE):
    """One digest of every input that decides ``generated_problems()``: the files under ``root`` (the kit;
    ``generate.ROOT`` by default) named by GENERATED_FOLDERS and GENERATED_FILES, the generator's code
    (every file of the package ``code``), and the versions of Python and of the GENERATED_BY packages."""
    from autograder.grading import fingerprint
    from autograder.platforms import generate

    root = Path(root or generate.ROOT)
    parts = {folder: fingerprint._folder_digest(str(root / folder), endings=("",)) for folder in GENERATED_FOLDERS}
    parts["files"] = fingerprint._files_digest(str(root), GENERATED_FILES)
    parts["code"] = fingerprint._folder_digest(str(code), endings=("",))
    parts["runtime"] = {"python": sys.version, **{name: fingerprint._version(name) for name in GENERATED_BY}}
    return fingerprint._text_digest(json.dumps(parts, sort_keys=True))


def generated_cache_dir():
    from autograder.grading import reference_check

    return os.path.join(os.path.dirname(reference_check.cache_dir()), "generated-in-sync")


def generated_in_sync_known(key):
    """Whether every generated file was found in sync when the inputs were those of ``key`` (a file named by it)."""
    return os.path.isfile(os.path.join(generated_cache_dir(), key))


def remember_generated_in_sync(key):
    """Keep the verdict "all in sync" under ``key``; a cache that cannot be written only costs the check next time."""
    folder = generated_cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, key), "w", encoding="utf-8"):
            pass
    except OSError:
        pass


def in_child(check):
    """Run ``check()`` (a list of lines) in a forked child; returns a function that waits for its lines."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_fd)
            if "torch" in sys.modules:  # the parent's OpenMP threads are not in this fork: one thread, no pool
                sys.modules["torch"].set_num_threads(1)  # (a pool the parent started would hang its first op)
            try:
                lines = check()
            except Exception as err:  # a check that fails is a problem to name, like any other
                lines = [f"checking the generated files failed: {type(err).__name__}: {err}",
                         *traceback.format_exc().splitlines()[-3:]]
            with os.fdopen(write_fd, "w") as out:
                json.dump(lines, out)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)

    def wait():
        with os.fdopen(read_fd) as f:
            text = f.read()
        _, status = os.waitpid(pid, 0)
        try:
            return json.loads(text)
        except ValueError:
            return [f"checking the generated files: its process ended without an answer (wait status {status})"]
    return wait


# --- one torch import for this process and the zygote ---------------------------------------------
#
# ``python -m autograder.platforms.validate`` starts itself again with the zygote's allow-listed
# environment (``zygote.child_environment``), as the Gradescope command does, and the instructor's
# environment in an anonymous file (memfd) that only this process reads. The restarted process imports
# torch and the probes (``zygote.preload``) and forks the zygote (``Zygote(preloaded=True)``) before it
# reads anything: at the fork it holds the kit's code, torch, the probes, the isolation level and its
# argv (the kit's path, the anonymous file's number, the isolation settings), which is what an exec'd
# zygote holds too. Nothing of tests_hidden/, solution/, grading.yaml or the instructor's environment has
# been read yet: the suite is collected, the settings loaded and the environment read back only after the
# fork, and the forked zygote closes every descriptor but its socket and stdio (the anonymous file too).
# So its children, which grade the reference and the stubs, see what they would see from an exec'd zygote.
# The early check (``early_check``) does read the environment, solution/ and assignment/, in its own child
# forked before torch's import: only its answer reaches this process, through a pipe read after the fork
# (the zygote closes that pipe with every other descriptor).

_RESTARTED = ("import sys; sys.path.insert(0, sys.argv[1]); from autograder.platforms.validate import restarted; "
              "sys.exit(restarted(int(sys.argv[2]), sys.argv[3]))")


def restart_with_allow_listed_environment():
    """Exec this command again (``restarted``) with the allow-listed environment, this one kept in an anonymous
    file. Returns only when that cannot be done (no memfd, or exec failed): then the zygote is exec'd."""
    from autograder.containment.zygote import isolation_settings, restart_allow_listed

    if not hasattr(os, "memfd_create") or not hasattr(os, "environb"):
        return
    fd = os.memfd_create("validate-environment", 0)  # no close-on-exec: the restarted process reads it
    try:
        with open(fd, "wb", closefd=False) as f:
            f.write(b"\0".join(k + b"=" + v for k, v in os.environb.items()))
        os.lseek(fd, 0, os.SEEK_SET)
        restart_allow_listed(["-c", _RESTARTED, KIT_ROOT, str(fd), json.dumps(isolation_settings())])
    except OSError as err:
        os.close(fd)
        print(f"validate: could not restart with the allow-listed environment ({err}): the zygote is exec'd",
              file=sys.stderr)


def read_environment(fd):
    """Replace this process's environment with the one kept in the anonymous file ``fd`` (then closed here; read
    from its start, whatever another process sharing it read)."""
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    os.close(fd)
    entries = [entry.partition(b"=") for entry in data.split(b"\0") if entry]
    os.environb.clear()
    os.environb.update({name: value for name, _, value in entries})


def restarted(environment_fd, settings):
    """The restarted command: fork the zygote first (one torch import for both), then read the instructor's
    environment back and check as ``main`` does."""
    from autograder.platforms.gradescope import start_zygote

    early = in_child(lambda: early_check(environment_fd))  # (a sibling of the zygote, never its parent)
    try:
        zygote = start_zygote(json.loads(settings))  # forked when this environment is the allow-list
    except Exception as err:  # checked all the same, with an exec'd zygote
        print(f"validate: could not fork the sandbox's zygote ({type(err).__name__}: {err}): it is exec'd",
              file=sys.stderr)
        zygote = None
    finally:
        read_environment(environment_fd)
    return main(zygote=zygote, early=early)


def print_gradescope_total_change():
    """A note, not a problem: the last built Gradescope zip (dist/autograder.zip) was built for another total."""
    from autograder.platforms import gradescope_zip

    before = gradescope_zip.built_total()
    if before is None:
        return
    try:
        line = gradescope_zip.total_change(before, gradescope_zip.suite_total())
    except RuntimeError:  # a suite that does not collect: part_problems named it
        return
    if line:
        print(f"note: {line}; run `make gradescope` first")


def main(argv=None, zygote=None, early=None):
    """The check (``argv``: none); ``zygote``: one already started (``restarted``), else one is exec'd here;
    ``early``: waits for ``early_check``'s answer, when it runs."""
    from autograder.config import ConfigError, load_config
    from autograder.containment import isolation
    from autograder.containment.zygote import Zygote

    try:
        config, config_problems = load_config(), []
    except ConfigError as err:
        config, config_problems = None, [f"grading.yaml: {err}"]
    if config is None and zygote is not None:
        zygote.stop()
        zygote = None
    if zygote is not None:
        level, layers = zygote.level, zygote.layers
    elif config is not None:
        level = isolation.choose_level()
        layers = isolation.detect_layers(level)
        zygote = Zygote(level, layers=layers)  # imports torch in its own process while this one collects
    try:
        # Computed before the checks read anything and again after: a verdict is kept only when no input
        # changed meanwhile (the early check's key, computed before it read anything, must agree too).
        key = generated_key()
        cached, checks = generated_in_sync_known(key), None
        if not cached and "torch" in sys.modules:  # (the forked zygote's preload): started before the suite is read
            checks = start_generated_checks(with_nbgrader=early is None)
        problems = part_problems() + config_problems  # imports torch here unless loaded (an exec'd zygote imports its own)
        if not cached and checks is None:
            checks = start_generated_checks(with_nbgrader=early is None)
        if zygote is not None:
            problems += grading_problems(config, zygote, level, layers)
        generated, keys = [], {key}
        answer = early() if early is not None else None  # always waited for
        if not cached:
            if isinstance(answer, dict) and answer["lines"] is not None:
                generated += answer["lines"]
                keys.add(answer["key"])
            elif isinstance(answer, dict):  # cached under its key, not this one (an input changed): checked now
                generated += in_child(nbgrader_problems)()
            elif answer is not None:  # it failed: its lines say how
                generated += answer
            for wait in checks:
                generated += wait()
            if not generated and keys == {generated_key()}:
                remember_generated_in_sync(key)
        problems += generated
    finally:
        if zygote is not None:
            zygote.stop()
            zygote.kill_sandbox_users()
    for line in problems:
        print(line)
    if config is not None:
        print_gradescope_total_change()
    if problems:
        print(f"validate: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("validate: the reference scores full marks, the stubs 0, points and parts agree, generated files in sync")
    return 0


if __name__ == "__main__":
    restart_with_allow_listed_environment()
    sys.exit(main())
