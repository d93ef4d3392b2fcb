
import sys


def causal_mask(seq_len, device=None):
    sys.exit("causal_mask quits instead of returning")
