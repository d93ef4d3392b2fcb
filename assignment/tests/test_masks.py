"""causal_mask and padding_mask: shape, dtype and which positions are allowed."""
import pytest
import torch

from checks import check_layout, check_tensor, fail, lower_triangle

# (B=2, T=5); 0 is the usual pad id, 9 shows that pad_id is a parameter.
TOKENS = torch.tensor([[5, 7, 2, 0, 0],
                       [3, 0, 9, 4, 1]])


def real_tokens(tokens, pad_id):
    """The expected padding mask, entry by entry: True where the token is not padding."""
    batch, seq = tokens.shape
    expected = torch.zeros(batch, 1, 1, seq, dtype=torch.bool)
    for b in range(batch):
        for t in range(seq):
            expected[b, 0, 0, t] = tokens[b, t].item() != pad_id
    return expected


@pytest.mark.points(1)
def test_causal_mask_is_a_square_bool_tensor(attention):
    for seq_len in (1, 4, 7):
        check_layout(attention.causal_mask(seq_len), (seq_len, seq_len), torch.bool,
                     case=f"causal_mask({seq_len})", what="mask", hint="causal_mask(T) is a (T, T) tensor")


@pytest.mark.points(2)
def test_causal_mask_allows_the_past_and_blocks_the_future(attention):
    for seq_len in (2, 5):
        check_tensor(attention.causal_mask(seq_len), lower_triangle(seq_len),
                     case=f"causal_mask({seq_len})", what="mask", hint=(
                         "mask[i, j] is True when query i may attend key j, that is j <= i: "
                         "True on and below the diagonal, False above it"))


@pytest.mark.points(1)
def test_causal_mask_is_created_on_the_requested_device(attention):
    # "meta" tensors have a device but no data: any machine can check where the mask lives.
    case = "causal_mask(3, device='meta')"
    mask = attention.causal_mask(3, device=torch.device("meta"))
    check_layout(mask, (3, 3), torch.bool, case=case, what="mask")
    if mask.device.type != "meta":
        fail(case, f"the mask is on {mask.device}, expected meta",
             hint="pass device=device to the function that creates the tensor")


@pytest.mark.points(1)
def test_padding_mask_is_bool_with_shape_batch_1_1_seq(attention):
    check_layout(attention.padding_mask(TOKENS, pad_id=0), (2, 1, 1, 5), torch.bool,
                 case="padding_mask(tokens (2, 5), pad_id=0)", what="mask", hint=(
                     "add two singleton dims so the mask is (B, 1, 1, T): it broadcasts over heads and queries"))


@pytest.mark.points(2)
def test_padding_mask_is_true_exactly_at_real_tokens(attention):
    for pad_id in (0, 9):
        check_tensor(attention.padding_mask(TOKENS, pad_id), real_tokens(TOKENS, pad_id),
                     case=f"padding_mask({TOKENS.tolist()}, pad_id={pad_id})", what="mask",
                     hint="True where the key is a real token, False where it equals pad_id")
