"""Platforms and generated files: the kit where course staff run it.

``gradescope`` is the entry Gradescope runs (with ``gradescope_files/``: setup.sh and
run_autograder), ``gradescope_zip`` builds its zip; ``nbgrader_course`` builds the nbgrader course
and ``nbgrader_grading`` runs on its grading machine; ``generate`` writes the stubs, the notebook
and the otter checks from the reference; ``validate`` is ``make validate``, the check after a change.

May import: anything in the engine. Only the command line (``cli``) and other platforms import a platform.
"""
