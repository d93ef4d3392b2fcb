import os
import sys

from autograder.cli import main

code = main()
# Every report is written and closed by now. Skipping the interpreter's teardown (freeing torch's
# modules one by one) saves about 0.15 s a run, a tenth of a torch import.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
