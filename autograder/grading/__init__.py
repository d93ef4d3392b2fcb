"""Grading: from a submission on disk to a record of every test.

``stage`` and ``discover`` find and copy a submission, ``runner`` runs the hidden suite on one
(``plugin`` gives pytest the points), ``batch`` many, each in a forked grader. ``student`` is the
tests' handle on the sandboxed children, which ``children`` starts and retires; the tests judge their
answers with ``judging``'s library, and ``oracle`` writes the reference's attention for MHA's oracle child.
``fingerprint`` and ``reference_check`` decide what can be reused (``resume`` plans a run with them, and ends
one that grades nothing without torch), ``suite_points`` reads the
totals from the suite, ``by_hand`` runs the suite under plain pytest.

May import: the shared facts at the top, containment, judging and reports; never platforms.
"""
