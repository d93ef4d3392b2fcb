"""Reports: what a grade looks like to a student and to course staff.

``report`` writes one submission's files: ``results`` (Gradescope's results.json), ``feedback``
(feedback.md), ``html_pages`` (feedback.html and summary.html) with ``pictures`` and
``lab_figure``; ``classbook`` writes the gradebook and the class summary; ``inert_text`` makes a
submission's text safe to show.

May import: the shared facts at the top (``parts``) and itself; never containment, grading or
platforms.
"""
