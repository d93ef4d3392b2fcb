"""Seeded inputs (autograder/judging/seeded.py): the hidden cases' randn, copied into the public checks."""
import pytest
import torch

from autograder.platforms import generate
from autograder.judging.seeded import randn
from conftest import public_checks


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others():
    assert torch.equal(randn(3, 4, seed=7), randn(3, 4, seed=7))
    assert not torch.equal(randn(3, 4, seed=7), randn(3, 4, seed=8))


def test_the_global_generator_is_left_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    randn(5, seed=3)
    assert torch.equal(torch.rand(1), expected), "drawing seeded inputs moved torch's global generator"


def test_a_float32_input_is_its_float64_twin_rounded():
    low, high = randn(2, 6, seed=4, dtype=torch.float32), randn(2, 6, seed=4, dtype=torch.float64)
    assert low.dtype == torch.float32 and torch.equal(low, high.float())


def test_scale_multiplies_before_the_cast():
    assert torch.equal(randn(4, seed=1, scale=3.0), randn(4, seed=1) * 3.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_the_public_checks_draw_the_numbers_the_hidden_cases_draw(dtype):
    public = public_checks()
    assert torch.equal(public.randn(2, 3, 4, seed=11, dtype=dtype), randn(2, 3, 4, seed=11, dtype=dtype)), (
        "assignment/tests/checks.py's randn differs from autograder/judging/seeded.py's: run `make stubs`")


def test_the_seeded_region_is_rendered_between_its_markers(tmp_path):
    path = tmp_path / "checks.py"
    path.write_text(f"before\n{generate.SEEDED_BEGIN}\nstale\n{generate.SEEDED_END}\nafter\n", encoding="utf-8")
    assert generate.render_region_of(generate.SEEDED_SOURCE, path) == (
        f"before\n{generate.SEEDED_BEGIN}\n{generate.seeded_source()}{generate.SEEDED_END}\nafter\n")


def test_a_missing_seeded_marker_is_named(tmp_path):
    path = tmp_path / "checks.py"
    path.write_text(f"{generate.SEEDED_BEGIN}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="seeded-input marker"):
        generate.render_region_of(generate.SEEDED_SOURCE, path)
