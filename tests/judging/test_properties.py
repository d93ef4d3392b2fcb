"""The measured properties (autograder/judging/properties.py): each names the one that failed, with its evidence,
on a result with that defect planted, and says nothing on a right result."""
import math

import pytest
import torch

from autograder.judging import properties

T = 5


def inputs(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(2, T, 4, generator=generator, dtype=torch.float64) for _ in range(3)]


def attention(query, key, value, mask=None):
    scores = query @ key.mT / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ value, weights


CAUSAL = torch.ones(T, T, dtype=torch.bool).tril()
PADDING = torch.tensor([[True, True, True, False, False], [True] * 5])[:, None, None, :]  # (B, 1, 1, T)
TOKENS = torch.tensor([[5, 7, 2, 9, 9], [3, 0, 4, 1, 8]])  # pad_id 9: sentence 0 has two pads


@pytest.mark.parametrize("mask", [None, CAUSAL])
def test_right_attention_has_every_property(mask):
    q, k, v = inputs()
    output, weights = attention(q, k, v, mask)
    assert properties.attention_properties(output, weights, v, mask) is None
    assert properties.calls_differ((output, weights), attention(q, k, v, mask)) is None


def test_right_padding_attention_has_every_property():
    q, k, v = (x.unsqueeze(1) for x in inputs())  # (B, 1, T, d)
    output, weights = attention(q, k, v, PADDING)
    assert properties.attention_properties(output, weights, v, PADDING) is None


def test_scores_returned_as_weights_are_not_a_distribution():
    q, k, v = inputs()
    output, _ = attention(q, k, v)
    scores = q @ k.mT / 2
    assert properties.attention_properties(output, scores, v).startswith("the weights are not a distribution")


def test_a_row_that_does_not_sum_to_1_is_named_with_its_sum():
    q, k, v = inputs()
    output, weights = attention(q, k, v)
    weights = weights.clone()
    weights[1, 3] *= 0.5
    assert properties.not_a_distribution(weights) == ("the weights are not a distribution over the keys: row (1, 3) "
                                                      "sums to 0.5, not 1")


def test_inf_weights_are_not_a_distribution():
    weights = torch.full((2, T, T), 1 / T).masked_fill(~CAUSAL, float("-inf"))
    assert properties.not_a_distribution(weights).startswith("the weights are not a distribution: they hold inf/NaN")


def test_a_causal_leak_is_placed_above_the_diagonal():
    q, k, v = inputs()
    output, weights = attention(q, k, v, torch.ones(T, T, dtype=torch.bool).tril(1))
    found = properties.attention_properties(output, weights, v, CAUSAL)
    assert found.startswith("a key the mask blocks got weight") and "above the diagonal only" in found


def test_a_padding_leak_names_the_position_and_the_sentence():
    q, k, v = (x.unsqueeze(1) for x in inputs())
    output, weights = attention(q, k, v)
    assert "padding position 3 of sentence 0" in properties.blocked_weight(weights, PADDING)


def test_an_output_that_is_not_weights_at_value_is_named():
    q, k, v = inputs()
    output, weights = attention(q, k, v)
    assert properties.attention_properties(output * 1.1, weights, v).startswith(
        "the output is not your weights applied to the values")


def test_two_calls_that_differ_are_called_random():
    q, k, v = inputs()
    output, weights = attention(q, k, v)
    dropped = weights * (torch.arange(T) % 2 == 0) * 2  # what dropout may give on a second call
    assert "the code is random" in properties.calls_differ((output, weights), (output, dropped))


@pytest.mark.parametrize("got, expected, named", [((5, 3, 2, 4), (2, 3, 5, 4), True), ((2, 3, 5, 4), (2, 3, 5, 4), False),
                                                   ((2, 3, 5), (2, 3, 5, 4), False), ((2, 3, 6, 4), (2, 3, 5, 4), False)])
def test_sizes_in_the_wrong_order_are_named_only_then(got, expected, named):
    found = properties.sizes_permuted(got, expected)
    assert (found is not None) == named
    if named:
        assert found.startswith("the sizes are right but in the wrong order: got (5, 3, 2, 4)")


def test_two_sizes_held_in_one_dim_are_named_with_the_view_that_is_missing():
    found = properties.sizes_merged((2, 12, 5), (2, 3, 5, 4))  # split_heads without its view
    assert found.startswith("the result (2, 12, 5) has the sizes of (2, 3, 5, 4) but with 3 and 4 in one dim where "
                            "two belong: a view or reshape into them is missing")


def test_a_size_split_in_two_dims_is_named_with_the_join_that_is_missing():
    found = properties.sizes_merged((2, 5, 3, 4), (2, 5, 12))  # merge_heads without its flatten
    assert "3 and 4 in two dims where one belongs (12): a view or reshape that joins them is missing" in found


@pytest.mark.parametrize("got, expected", [((2, 3, 5, 4), (2, 3, 5, 4)), ((2, 5, 12), (2, 1, 5, 12)),
                                           ((2, 12, 6), (2, 3, 5, 4)), ((5, 3, 2, 4), (2, 3, 5, 4))])
def test_shapes_that_are_right_or_not_a_view_away_name_no_merge(got, expected):
    assert properties.sizes_merged(got, expected) is None  # a missing unsqueeze (a size 1) is not a view


def test_dims_of_size_one_missing_are_named_with_the_unsqueeze():
    found = properties.sizes_of_one((4, 5), (4, 1, 1, 5))  # padding_mask without its [:, None, None, :]
    assert found.startswith("the result (4, 5) has the sizes of (4, 1, 1, 5) in order, without its 2 dims of size 1: "
                            "add them (unsqueeze")


def test_a_dim_of_size_one_extra_is_named_with_the_squeeze():
    found = properties.sizes_of_one((2, 1, 5, 4), (2, 5, 4))  # a keepdim=True left in
    assert "with 1 dim of size 1 more: remove it (squeeze, or keepdim=False)" in found


@pytest.mark.parametrize("got, expected", [((4, 1, 1, 5), (4, 1, 1, 5)), ((4, 1, 5, 1), (4, 1, 1, 5)),
                                           ((5, 4), (4, 1, 1, 5)), ((2, 12, 5), (2, 3, 5, 4))])
def test_shapes_that_are_right_or_differ_in_more_than_dims_of_size_one_name_none(got, expected):
    assert properties.sizes_of_one(got, expected) is None


def test_a_forward_already_wrong_under_a_gradient_test_is_named_by_how():
    right = torch.ones(2, 3)
    assert "already wrong (by up to 0.5), so its gradients are too" in properties.forward_already_wrong(
        "output", right + 0.5, right)
    assert "(it holds inf/NaN where the lab's is finite)" in properties.forward_already_wrong(
        "output", right * float("nan"), right)
    assert "(its shape)" in properties.forward_already_wrong("weights", right.mT, right)


def test_a_right_forward_under_a_gradient_test_names_nothing():
    right = torch.ones(2, 3, dtype=torch.float64)
    assert properties.forward_already_wrong("output", right.float(), right) is None  # float32-accurate is right


def test_a_changed_dtype_is_named():
    assert "the dtype changed" in properties.dtype_or_device_changed(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    assert properties.dtype_or_device_changed(torch.zeros(2), torch.zeros(3)) is None


@pytest.mark.parametrize("got, words", [
    (TOKENS != 0, "the mask follows pad_id=0, not the pad_id=9 it was given"),
    (TOKENS == 9, "the mask is True at the padding (tokens == 9)"),
    ((TOKENS[:1] != 9).expand_as(TOKENS), "every sentence got the first sentence's padding"),
])
def test_the_padding_a_wrong_mask_followed_is_named(got, words):
    assert words in properties.padding_followed(got[:, None, None, :], TOKENS, 9)


def test_a_right_padding_mask_follows_nothing_else():
    assert properties.padding_followed((TOKENS != 9)[:, None, None, :], TOKENS, 9) is None


def test_where_masks_differ_and_their_picture():
    wrong = torch.ones(T, T, dtype=torch.bool).tril(1) != CAUSAL
    assert properties.where_differ(wrong) == "; only positions above the diagonal differ"
    assert properties.mask_picture(CAUSAL[:3, :3]) == "100 / 110 / 111"


def test_what_went_into_a_call_is_shown_in_order():
    assert properties.shapes_in([torch.zeros(2, 3, 4), torch.zeros(2, 6, 4, dtype=torch.float64), None]) == (
        "the call got (2, 3, 4) float32, (2, 6, 4) float64, None")
    assert properties.shapes_in([3, None]) is None


def test_a_float_result_of_another_dtype_than_its_inputs_is_named_with_both():
    found = properties.dtype_changed(torch.float32, torch.float64)
    assert found.startswith("the dtype changed: got torch.float32, the inputs are torch.float64")
    assert properties.dtype_changed(torch.float64, torch.float64) is None
    assert properties.dtype_changed(torch.int64, torch.int32) is None  # not a float result: no input's dtype to keep


def test_a_mask_that_is_not_bool_is_named_with_its_dtype():
    found = properties.dtype_changed(torch.float32, torch.bool)
    assert found.startswith("the dtype changed: got torch.float32, a mask is torch.bool")
    assert properties.dtype_changed(torch.bool, torch.bool) is None


def test_sizes_stored_as_a_float_are_named():
    expected = {"d_model": 16, "n_heads": 4, "d_k": 4}
    assert properties.sizes_stored(dict(expected), expected) is None
    found = properties.sizes_stored({**expected, "d_k": 4.0}, expected)
    assert "self.d_k is 4.0 (a float), not 4" in found and properties.properties_named(found) == {"sizes stored wrong"}


def test_projections_that_ignore_bias_are_named():
    assert properties.bias_not_followed({"w_q": True, "w_k": True}, True) is None
    assert properties.bias_not_followed({"w_q": True, "w_k": False}, False).startswith("bias=False gave w_q a bias")


def test_sizes_that_are_not_positive_and_not_refused_are_named_with_what_happened():
    assert properties.size_not_refused([((0, 4), "ValueError")]) is None
    found = properties.size_not_refused([((0, 4), "created a module"), ((8, 0), "ZeroDivisionError"),
                                         ((-8, 2), "ValueError")])
    assert "MultiHeadAttention(0, 4) created a module; MultiHeadAttention(8, 0) raised ZeroDivisionError:" in found
    assert "(-8, 2)" not in found


def test_inputs_that_get_a_gradient_say_nothing():
    assert properties.no_gradient([("query", torch.ones(2)), ("key", torch.tensor([0.0, 1e-9]))]) is None


def test_inputs_autograd_does_not_reach_are_named():
    found = properties.no_gradient([("query", torch.ones(2)), ("key", None), ("value", None)])
    assert found.startswith("no gradient reaches key and value: the result does not depend on them through autograd")


def test_an_all_zero_gradient_is_named_as_one():
    found = properties.no_gradient([("query", None), ("key", torch.zeros(3))])
    assert found.startswith("no gradient reaches query and key (the gradient w.r.t. key is all zeros)")
    assert properties.properties_named(found) == {"no gradient"}


def test_each_property_sentence_is_told_by_its_opening():
    q, k, v = inputs()
    output, weights = attention(q, k, v)
    assert properties.properties_named(properties.output_not_applied(output + 1, weights, v)) == {
        "output is not weights @ value"}
    assert properties.properties_named(properties.padding_followed(TOKENS != 0, TOKENS, 9)) == {"another pad_id"}
    assert properties.properties_named("the weights are right") == set()


# --- the scores, read from the logs of the weights -------------------------------------------------

@pytest.mark.parametrize("mask", [None, CAUSAL])
def test_right_weights_are_a_softmax_of_the_scores(mask):
    q, k, v = inputs()
    assert properties.scores_off(attention(q, k, v, mask)[1], q, k, mask) is None


@pytest.mark.parametrize("divisor", [1.0, 4.0, math.sqrt(8.0)])
def test_a_wrong_scale_is_measured_with_what_the_scores_are_divided_by(divisor):
    q, k, v = inputs()  # d_k = 4: sqrt(d_k) = 2
    weights = (q @ k.mT / divisor).masked_fill(~CAUSAL, float("-inf")).softmax(-1)
    finding = properties.scores_off(weights, q, k, CAUSAL)
    assert finding.startswith("the weights are softmax(c · Q K^T / sqrt(d_k)) with c = ")
    assert f"Q K^T divided by {divisor:.4g}, where sqrt(d_k) = 2" in finding, finding


def test_scores_made_of_other_tensors_are_measured_as_no_multiple_of_q_k():
    q, k, v = inputs()
    finding = properties.scores_off(attention(q, v, v)[1], q, k)  # the values used as keys
    assert finding.startswith("the weights are not a softmax of any multiple of Q K^T"), finding


def test_a_float32_softmax_of_the_right_scores_is_not_a_wrong_scale():
    q, k, v = inputs()
    assert properties.scores_off(attention(q, k, v)[1].float(), q.float(), k.float()) is None


# --- the rows of a tiled output, the steps of decoding ----------------------------------------------

def test_tiled_rows_that_are_multiples_of_the_right_ones_are_measured():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    finding = properties.tiled_rows(output * 1.5, output, v, causal=True, block_size=2)
    assert finding.startswith("each wrong output row is a multiple of the right one (row (0, 0) is 1.5 times it)")


def test_tiled_rows_wrong_only_where_keys_span_blocks_are_measured():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    wrong = output.clone()
    wrong[:, 2:] += 0.01 * torch.arange(1, 5, dtype=wrong.dtype)  # rows 2.. see keys of two blocks of 2
    finding = properties.tiled_rows(wrong, output, v, causal=True, block_size=2)
    assert finding.startswith("only the output rows whose keys span more than one block are wrong (block_size=2; "
                              "the first wrong row is 2)"), finding


def test_a_tiled_row_outside_the_values_range_is_no_weighted_average():
    q, k, v = inputs()
    output = attention(q, k, v)[0]
    wrong = output.clone()
    wrong[0, 0, 1] = v[0, :, 1].max() + 1
    assert "output row (0, 0) is not a weighted average of the value rows: feature 1" in properties.tiled_rows(
        wrong, output, v, causal=False, block_size=64)


def test_a_tiled_row_that_is_not_finite_where_attention_is_is_measured():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    wrong = output.clone()
    wrong[1, 3, 2] = float("nan")
    finding = properties.tiled_rows(wrong, output, v, causal=True, block_size=2)
    assert finding.startswith("output row (1, 3) holds nan where attention's output is finite"), finding


def test_a_wrong_tiled_row_whose_keys_lie_in_one_block_is_measured():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    wrong = output.clone()
    wrong[:, 1] = (output[:, 0] + output[:, 1]) / 2  # inside the values' range, no multiple of the right row
    finding = properties.tiled_rows(wrong, output, v, causal=True, block_size=2)
    assert finding.startswith("output row (0, 1) is wrong though every key it may attend lies in the first block "
                              "(block_size=2, causal)"), finding


def test_a_wrong_tiled_row_is_one_block_of_an_unknown_size_only_if_it_may_attend_one_key():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    wrong = output.clone()
    wrong[:, 1] = (output[:, 0] + output[:, 1]) / 2  # row 1 sees keys 0 and 1: two blocks of one key each
    assert properties.tiled_rows(wrong, output, v, causal=True, block_size=None) is None
    first = wrong.clone()
    first[:, 0] = (v[:, 0] + v[:, 1]) / 2  # row 0 sees key 0 alone: in the first block, whatever the size
    assert "output row (0, 0) is wrong though every key it may attend lies in the first block (any block size" in \
        properties.tiled_rows(first[:, :1], output[:, :1], v, causal=True, block_size=None)


def test_tiled_outputs_right_with_one_block_and_wrong_with_more_are_measured():
    q, k, v = inputs()
    output = attention(q, k, v)[0]
    finding = properties.tiled_blocks({1: output * 1.1, 3: output, 64: output}, output, T)
    assert finding.startswith(f"the output is right when one block holds every key (block_size=64 >= {T} keys) and "
                              "wrong with block_size=1"), finding


def test_tiled_outputs_wrong_with_one_block_are_measured():
    q, k, v = inputs()
    output = attention(q, k, v)[0]
    finding = properties.tiled_blocks({1: output * 1.1, 64: output + 0.5}, output, T)
    assert finding.startswith(f"the output is wrong even when one block holds every key (block_size=64 >= {T} keys)")


def test_tiled_outputs_say_nothing_without_a_one_block_call_or_when_all_are_right():
    q, k, v = inputs()
    output = attention(q, k, v)[0]
    assert properties.tiled_blocks({1: output * 1.1, 2: output}, output, T) is None
    assert properties.tiled_blocks({1: output, 64: output}, output, T) is None


def test_a_step_that_projects_the_past_again_is_measured():
    finding = properties.step_projections("w_k", [[2, 1, 12], [2, 2, 12], [2, 3, 12]], 3, 12)
    assert finding.startswith("at step 2, w_k was given an input of shape [2, 2, 12], not the new token alone "
                              "(B, 1, 12)"), finding


def test_a_projection_not_run_once_a_step_is_measured():
    assert properties.step_projections("w_v", [], 5, 12).startswith("the projection ran 0 times in 5 steps (w_v)")


def test_a_step_that_projects_the_new_token_alone_says_nothing():
    assert properties.step_projections("w_k", [[2, 1, 12]] * 4, 4, 12) is None


def test_right_tiled_rows_and_decoding_steps_say_nothing():
    q, k, v = inputs()
    output = attention(q, k, v, CAUSAL)[0]
    assert properties.tiled_rows(output, output, v, causal=True, block_size=2) is None
    assert properties.decode_steps([output[:, t:t + 1] for t in range(T)], output) is None


def test_decoding_right_at_step_1_and_wrong_after_is_measured():
    expected = inputs()[0]
    steps = [expected[:, t:t + 1] + (t > 0) for t in range(T)]
    assert properties.decode_steps(steps, expected).startswith("step 1 is right and steps 2, 3, 4, 5 of 5 are not")


def test_decoding_wrong_at_every_step_is_measured():
    expected = inputs()[0]
    steps = [expected[:, t:t + 1] + 1 for t in range(T)]
    assert properties.decode_steps(steps, expected).startswith("every step is wrong, the first (no cache yet) too")


def test_a_result_with_a_row_per_key_is_named_with_both_lengths():
    weights = torch.softmax(torch.randn(2, 4, 7, 7), dim=-1)  # (B, h, T_k, T_k): queries made from the key
    found = properties.rows_per_key(weights, 4, 7)
    assert found.startswith("the result has 7 rows, one row per key where one per query belongs (4 queries)")


def test_a_row_per_query_or_equal_lengths_name_no_row_per_key():
    assert properties.rows_per_key(torch.zeros(2, 4, 4, 7), 4, 7) is None
    assert properties.rows_per_key(torch.zeros(2, 4, 5, 5), 5, 5) is None  # T_q == T_k: the rows tell nothing
    assert properties.rows_per_key(None, 4, 7) is None


def _heads():
    return torch.arange(2 * 3 * 5 * 4, dtype=torch.float64).reshape(2, 3, 5, 4)  # (B, h, T, d_k), distinct values


def test_merged_heads_left_unflattened_are_named():
    found = properties.heads_not_merged(_heads().transpose(1, 2), _heads())
    assert found.startswith("the result is (B, T, n_heads, d_k): the heads are back in place but not flattened")


def test_merged_heads_mixing_positions_name_the_first_mixed_row():
    found = properties.heads_not_merged(_heads().reshape(2, 5, 12), _heads())  # no transpose back first
    assert found.startswith("row (batch, position) = (0, 0) of the result holds values of other positions")


def test_merged_heads_with_each_positions_values_out_of_order_are_named():
    interleaved = _heads().permute(0, 2, 3, 1).reshape(2, 5, 12)  # (B, T, d_k, h) flattened
    assert properties.heads_not_merged(interleaved, _heads()).startswith(
        "each position holds its own values in the wrong order")


def test_right_or_changed_merged_values_name_no_merge_property():
    right = _heads().transpose(1, 2).reshape(2, 5, 12)
    assert properties.heads_not_merged(right, _heads()) is None
    assert properties.heads_not_merged(right * 2, _heads()) is None  # other values: not a rearrangement


def test_a_call_that_returned_one_of_its_inputs_names_it():
    query, key = torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    found = properties.returned_an_input(key.clone(), {"query": query, "key": key})
    assert found.startswith("it returned its key as it was given: nothing was computed")


def test_a_computed_result_names_no_input():
    query = torch.randn(2, 5, 4)
    assert properties.returned_an_input(query * 2, {"query": query}) is None
    assert properties.returned_an_input((query, query), {"query": query}) is None  # a pair is not a tensor


def test_a_constant_mask_follows_nothing():
    assert "True at every position" in properties.mask_constant(torch.ones(4, 4, dtype=torch.bool))
    assert "False at every position" in properties.mask_constant(torch.zeros(2, 1, 1, 5, dtype=torch.bool))


def test_a_mask_holding_both_values_or_one_position_is_not_called_constant():
    assert properties.mask_constant(CAUSAL) is None
    assert properties.mask_constant(torch.ones(1, 1, dtype=torch.bool)) is None  # causal_mask(1) is right so
    assert properties.mask_constant("not a tensor") is None


def test_sampled_rows_span_the_sequence_from_the_first_row_to_the_last():
    rows = properties.sampled_rows(4096)
    assert rows[0] == 0 and rows[-1] == 4095 and len(rows) == 33
    assert properties.sampled_rows(3) == [0, 1, 2, 2]


def test_rows_that_are_attention_are_not_named():
    query, key, value = inputs()
    output, _ = attention(query[0], key[0], value[0], CAUSAL)
    rows = [0, 2, 4]
    assert properties.rows_not_attention(output.float(), output[rows], rows) is None


def test_the_first_row_that_is_not_attention_is_named_with_its_error():
    query, key, value = inputs()
    output, _ = attention(query[0], key[0], value[0], CAUSAL)
    rows = [0, 2, 4]
    wrong = output.clone()
    wrong[2] += 0.5
    found = properties.rows_not_attention(wrong, output[rows], rows)
    assert found.startswith("row 2 of the output is wrong by up to 0.5 (1 of 3 rows compared with attention)")
    wrong[4] = float("nan")
    assert "(2 of 3 rows" in properties.rows_not_attention(wrong, output[rows], rows)
