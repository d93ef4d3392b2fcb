import os
import sys

from autograder.cli import main

code = main()
# Every report is written and closed by now, so the interpreter's teardown (freeing torch's
# modules one by one) would only add time to every run.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
