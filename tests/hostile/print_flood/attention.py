
import sys

_reference_causal_mask = causal_mask  # noqa: F821 (the reference's: this file is appended to it)
_flooded = False


def causal_mask(seq_len, device=None):
    """Correct, but prints 200 MiB the first time it is called."""
    global _flooded
    if not _flooded:
        _flooded = True
        print("FLOOD-START")
        block = ("x" * 1023 + "\n") * 1024  # 1 MiB
        for _ in range(200):
            sys.stdout.write(block)
        print("FLOOD-END")
    return _reference_causal_mask(seq_len, device)
