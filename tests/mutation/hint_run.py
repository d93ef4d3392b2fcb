"""Issue 47's figures on the generated mistakes: do `make test` and the grade name the same measured property, and
which hints have no failed probe behind them.

    python tests/mutation/hint_run.py [--sample N] [--out DIR]

Grades the mutants and runs the public tests on each (mutation_run.evaluate, with public_worker.py keeping each
failure's text), then reads every hint of a defect on both sides. A hint is *measured* when it states a property of
autograder/judging/properties.py (PROPERTY_WORDS), *catalogued* when it names a catalogue mistake (recomputed by its
own probe, catalogue.diagnose), else *static*: the case's fixed words, which no probe of this mutant measured.
A mutant whose two sides name no common property or cause may still name the same error raised at the same line
of the student's code (a crash: both show the exception, the line and the shapes that went in): counted apart.
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import mutation_engine as engine  # noqa: E402
import mutation_run  # noqa: E402
from autograder.judging.catalogue import CATALOGUE, FLOAT32_IN_FLOAT64, FOUND_FROM_PATTERN, PRECISION  # noqa: E402
from autograder.judging.properties import properties_named  # noqa: E402

CATALOGUED = {entry.sentence for kind in CATALOGUE.values() for entry, _ in kind} | {
    entry.sentence for entry in FOUND_FROM_PATTERN + (FLOAT32_IN_FLOAT64,)} | {
    entry.sentence for _, steps in PRECISION.values() for entry, _ in steps}


def hints(text):
    """The hint lines of a failure text (both sides write "hint: ...")."""
    return [line.split("hint:", 1)[1].strip() for line in text.splitlines() if "hint:" in line]


def kind_of(hint):
    if properties_named(hint):
        return "measured"
    if any(sentence in hint for sentence in CATALOGUED):
        return "catalogued"
    return "static"


def read(root, verdicts):
    """{mutant id: {"local", "grade": (properties named, catalogued names, static hints)}} for every defect."""
    local = {}
    for path in Path(root).glob("public-*.json"):
        local.update(json.loads(path.read_text()))
    found = {}
    for mutant_id, verdict in verdicts.items():
        if verdict.equivalent:
            continue
        folder = Path(root) / "batch" / mutant_id.replace(":", "+")  # mutation_run.folder_name
        feedback = (Path(root) / "reports" / folder.name / "feedback.md").read_text()
        public = "\n".join(c.get("message", "") for c in local.get(str(folder), {}).values())
        found[mutant_id] = {side: _summary(text) for side, text in (("local", public), ("grade", feedback))}
    return found


# Where the student's code raised: the grade writes "at mha.py line 76, in ...", make test "(mha.py, line 76)";
# for a backward broken in place, both name the edit the kit found: "in-place edit: attention.py, line 130: ...".
RAISED_AT = re.compile(r"\bat (\w+\.py) line (\d+)|\((\w+\.py), line (\d+)\)|in-place edit: (\w+\.py), line (\d+)")
# The error a failure shows: at a line's start, or after the case's words ("case: the backward pass failed: E: ...",
# the grade's "case: raised E: ...").
RAISED = re.compile(r"^(?:[^:\n]*: )*?(?:raised )?(\w+(?:Error|Exception)): ", re.M)


def raised(text):
    """The student's errors a failure text shows, "RuntimeError at mha.py:76": each error with the first place
    of the student's named after it, in the same failure."""
    found = set()
    for error in RAISED.finditer(text):
        place = RAISED_AT.search(text, error.end())
        following = RAISED.search(text, error.end())
        if place and (following is None or place.start() < following.start()):
            file, line = [group for group in place.groups() if group is not None]
            found.add(f"{error[1]} at {file}:{line}")
    return sorted(found)


def _summary(text):
    lines = hints(text)
    return {"measured": sorted(properties_named(text)),
            "catalogued": sorted({s for s in CATALOGUED if s in text}),
            "static": sorted({h for h in lines if kind_of(h) == "static"}),
            "raised": raised(text)}


def figures(found):
    both = [m for m, f in found.items() if f["local"]["measured"] and f["grade"]["measured"]]
    same = [m for m in both if set(found[m]["local"]["measured"]) & set(found[m]["grade"]["measured"])]
    same_cause = [m for m, f in found.items() if set(f["local"]["catalogued"]) & set(f["grade"]["catalogued"])]
    named = [m for m, f in found.items() if set(f["local"]["measured"]) & set(f["grade"]["measured"])
             or set(f["local"]["catalogued"]) & set(f["grade"]["catalogued"])]
    same_error = [m for m, f in found.items() if m not in named
                  and set(f["local"].get("raised", ())) & set(f["grade"].get("raised", ()))]
    return {"defect mutants": len(found),
            "a measured property on both sides": len(both),
            "the same measured property on both sides": len(same),
            "the same catalogued cause on both sides": len(same_cause),
            "the same property or cause on both sides": len(named),
            "else the same error at the same line of theirs": len(same_error),
            "a measured property on one side only": sum(bool(f["local"]["measured"]) != bool(f["grade"]["measured"])
                                                        for f in found.values()),
            "a static hint locally": sum(bool(f["local"]["static"]) for f in found.values()),
            "a static hint in the grade": sum(bool(f["grade"]["static"]) for f in found.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None)
    parser.add_argument("--out", default="bench/tmp/hints")
    args = parser.parse_args()
    mutants = engine.generate()
    mutants = engine.sample(mutants, args.sample) if args.sample else mutants
    out = Path(args.out)
    if out.exists():
        import shutil
        shutil.rmtree(out)
    verdicts, seconds = mutation_run.evaluate(mutants, out)
    found = read(out, verdicts)
    (out / "hints.json").write_text(json.dumps(found, indent=1))
    for name, count in figures(found).items():
        print(f"{name:<45} {count}")
    print(f"{'seconds (grade, public)':<45} {seconds['grade']:.0f}, {seconds['public']:.0f}")
    statics = {}
    for f in found.values():
        for side in ("local", "grade"):
            for hint in f[side]["static"]:
                key = (side, re.sub(r"-?\d[\d.e+-]*", "N", hint)[:110])
                statics[key] = statics.get(key, 0) + 1
    for (side, hint), count in sorted(statics.items(), key=lambda item: -item[1])[:25]:
        print(f"STATIC {side:<5} x{count:<3} {hint}")


if __name__ == "__main__":
    main()
