
import os

KIT, OUT, BATCH, MARKERS, TOKEN = "@KIT@", "@OUT@", "@BATCH@", "@MARKERS@", "@TOKEN@"
NAME = f"hx-{TOKEN}-written"
OUTSIDE = [
    os.path.join(MARKERS, NAME),  # a world-writable folder of the host
    f"/tmp/{NAME}",
    os.path.join(KIT, NAME),  # the kit, the reference, the hidden tests
    os.path.join(KIT, "solution", NAME),
    os.path.join(KIT, "tests_hidden", NAME),
    os.path.join(OUT, NAME),  # the reports
    os.path.join(BATCH, NAME),  # the submissions
]

for path in OUTSIDE + [NAME]:  # the last one is the scratch folder: allowed
    try:
        with open(path, "w") as f:
            f.write("escaped")
        print(f"WRITE {path} -> ok")
    except OSError as err:
        print(f"WRITE {path} -> refused ({type(err).__name__})")
