"""The catalogue names a mistake only when its probe tells it apart: the mistake's result matches the student's,
and differs from the right one on the same inputs."""
import torch

from autograder.judging import catalogue
from autograder.judging.seeded import randn

D_MODEL, HEADS = 8, 2


def state():
    """The four projections' parameters, as MultiHeadAttention(8, 2).state_dict() holds them."""
    names = [f"w_{p}.{kind}" for p in "qkvo" for kind in ("weight", "bias")]
    return {name: randn(*((D_MODEL, D_MODEL) if name.endswith("weight") else (D_MODEL,)), seed=i, dtype=torch.float64)
            for i, name in enumerate(names)}


def test_a_mistake_that_matches_is_named():
    x, y = randn(2, 5, D_MODEL, seed=10, dtype=torch.float64), randn(2, 7, D_MODEL, seed=11, dtype=torch.float64)
    inputs = (state(), HEADS, x, y, y, None)
    got = catalogue.mha(*inputs, inputs=("query", "query", "query"))  # keys and values projected from the query
    assert catalogue.diagnose("mha", got, *inputs).name == "kv_from_query"


def test_a_mistake_whose_result_is_the_right_one_on_these_inputs_is_never_named():
    x = randn(2, 5, D_MODEL, seed=10, dtype=torch.float64)
    inputs = (state(), HEADS, x, x, x, None)  # self-attention: keys and values from the query are right
    right = catalogue.mha(*inputs)
    assert catalogue.diagnose("mha", (right[0].float(), right[1].float()), *inputs) is None


def test_no_scaling_is_not_named_where_sqrt_d_k_is_1():
    q, k, v = (randn(2, 4, 1, seed=s, dtype=torch.float64) for s in (1, 2, 3))
    assert catalogue.diagnose("sdpa", catalogue.attention(q, k, v, None, scale=1.0), q, k, v, None) is None
    q, k, v = (randn(2, 4, 4, seed=s, dtype=torch.float64) for s in (1, 2, 3))
    assert catalogue.diagnose("sdpa", catalogue.attention(q, k, v, None, scale=1.0), q, k, v, None).name == "no_scaling"
