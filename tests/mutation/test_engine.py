"""The mutation engine (mutation_engine.py): a few hundred single defects of the reference, generated the same
way every time, each one change of the code a student writes and nothing else."""
import pytest

import mutation_engine as engine


@pytest.fixture(scope="module")
def mutants():
    return engine.generate()


def test_generation_is_deterministic_with_unique_sorted_ids(mutants):
    again = engine.generate()
    assert [(m.id, m.text) for m in mutants] == [(m.id, m.text) for m in again]
    ids = [m.id for m in mutants]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_a_few_hundred_mutants_and_every_operator_makes_some(mutants):
    assert 200 <= len(mutants) <= 600, len(mutants)
    silent = [name for name in engine.OPERATORS if not any(m.operator == name for m in mutants)]
    assert not silent, f"operators that make no mutant: {silent}"


def test_every_mutant_changes_solution_code_only(mutants):
    """The stub's text (outside ### BEGIN/END SOLUTION) is the lab's: a mutant keeps it as it is."""
    def outside(text):
        inside = engine.solution_lines(text)
        return [line for number, line in enumerate(text.splitlines(), 1) if number not in inside]

    reference = {file: (engine.SOLUTION / file).read_text() for file in engine.FILES}
    for mutant in mutants:
        assert mutant.text != reference[mutant.file], mutant.id
        assert outside(mutant.text) == outside(reference[mutant.file]), f"{mutant.id} edits the stub's text"


def test_a_mutant_is_written_as_a_students_submission(mutants, tmp_path):
    mutant = mutants[0]
    folder = engine.write_submission(mutant, tmp_path / "submission")
    assert sorted(p.name for p in folder.iterdir()) == ["attention.py", "mha.py"]
    for file in engine.FILES:
        text = (folder / file).read_text()
        assert engine.BEGIN not in text and engine.END not in text
        expected = mutant.text if file == mutant.file else (engine.SOLUTION / file).read_text()
        assert text == engine.without_markers(expected)


def test_the_sample_is_spread_over_the_list_and_fixed(mutants):
    sample = engine.sample(mutants, 12)
    assert len(sample) == 12 and sample == engine.sample(engine.generate(), 12)
    assert {m.file for m in sample} == set(engine.FILES)
