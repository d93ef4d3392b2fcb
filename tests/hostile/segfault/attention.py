
import ctypes


def padding_mask(tokens, pad_id):
    return ctypes.string_at(0)  # reads address 0: SIGSEGV
