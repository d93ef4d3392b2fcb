"""The bundled sample submissions stay copies of what they claim to be."""
import pytest

from variant_builder import ROOT, without_markers

SAMPLES = ROOT / "examples" / "submissions"


@pytest.mark.parametrize("name", ["attention.py", "mha.py"])
def test_reference_sample_is_the_solution_without_markers(name):
    expected = without_markers((ROOT / "solution" / name).read_text())
    assert (SAMPLES / "reference" / name).read_text() == expected, (
        f"examples/submissions/reference/{name} drifted from solution/{name}: copy it again without the "
        "BEGIN/END SOLUTION lines")


@pytest.mark.parametrize("name", ["attention.py", "mha.py"])
def test_stubs_sample_is_the_student_stub(name):
    assert (SAMPLES / "stubs" / name).read_text() == (ROOT / "assignment" / name).read_text(), (
        f"examples/submissions/stubs/{name} drifted from assignment/{name}: copy it again after `make stubs`")
