
import os

import torch

MARKERS = "@MARKERS@"
TOKEN = "@TOKEN@"
# Runs only if the grader unpickles what it received: it leaves a marker the test looks for.
UNPICKLE_PAYLOAD = f"open({os.path.join(MARKERS, 'hx-' + TOKEN + '-unpickled')!r}, 'w').write('ran')"

_reference_causal_mask = causal_mask  # noqa: F821 (the reference's: this file is appended to it)


class AgreeableTensor(torch.Tensor):
    """Equal to everything, and runs code when unpickled."""

    def __eq__(self, other):
        return True

    def __reduce_ex__(self, protocol):
        return (exec, (UNPICKLE_PAYLOAD,))


class Booby:
    """Not a tensor at all: only its unpickling does something."""

    def __reduce__(self):
        return (exec, (UNPICKLE_PAYLOAD,))


def causal_mask(seq_len, device=None):
    return _reference_causal_mask(seq_len, device).as_subclass(AgreeableTensor)


def padding_mask(tokens, pad_id):
    return Booby()
