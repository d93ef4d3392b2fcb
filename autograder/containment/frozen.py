"""Imports that live as long as the process (torch), done with the garbage collector off, then frozen.

A module of its own, importing nothing of the kit: the grader, the exec'd zygote and the forked one
use it before they import torch.
"""
import contextlib
import gc


@contextlib.contextmanager
def uncollected():
    """Import what lives as long as the process (torch) with the garbage collector off, then freeze it.
    A collection during torch's import scans torch's growing heap: about 0.2 s of CPU, for a few
    thousand cycles of import-time garbage; frozen, it is never scanned again (the later imports'
    collections, the forks' ones) and a fork's collections do not write to (copy) its pages."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
