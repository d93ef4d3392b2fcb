
import os


def causal_mask(seq_len, device=None):
    os._exit(7)  # no exception to catch: the process is just gone
