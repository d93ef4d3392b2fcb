
import sys

sys.exit("mha.py quits while it is imported")
