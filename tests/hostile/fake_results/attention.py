
import json
import os

OUT, TOKEN = "@OUT@", "@TOKEN@"
FAKE = {"score": 1000.0, "output": "FAKE-REPORT-" + TOKEN, "tests": []}
TARGETS = [
    "results.json",  # the current folder: the submission's own scratch
    os.path.join(OUT, "fake_results", "results.json"),  # its own report, by guessing the --out folder
    os.path.join(OUT, "reference", "results.json"),  # another submission's report
    "/autograder/results/results.json",  # where Gradescope reads results
]

for target in TARGETS:
    try:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        with open(target, "w") as f:
            json.dump(FAKE, f)
        print(f"FAKE {target} -> written")
    except OSError as err:
        print(f"FAKE {target} -> refused ({type(err).__name__})")
