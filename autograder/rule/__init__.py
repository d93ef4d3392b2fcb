"""The from-scratch rule: what a student's attention.py and mha.py may contain, decided from their text.

The rule is a specification in three modules, read in this order:

- ``tables``: the allow-lists, grouped by purpose: the modules a file may import and each one's names
  (``ALLOWED``, ``ANNOTATION_ONLY``), the members of values (``VALUE_MEMBERS``), Python's built-ins
  (``ALLOWED_BUILTINS``, ``REFUSED_NAMES``), the interpreter's members and the syntax the checker refuses;
- ``source``: how a file's bytes are read, as Python itself reads them (``read_source``, ``decode_source``);
- ``checker``: the checker over that text (``find_forbidden_calls``, ``file_findings``), the message and
  hint of each finding, and the one text of a refusal (``refusal``).

``submit_cli`` is the command students run (``python submit.py``): their assignment/submit.py is
generated from these four modules (``autograder/platforms/generate.py``) as one script, so the grader,
`make test` and `make submit` apply one rule, and an engine upgrade brings the student's copy along.
The engine reads the rule through ``autograder/rules.py``.

May import: the standard library only, and its own modules (as ``from autograder.rule.<module> import
<name>``, which the generated script drops): nothing else of the engine, since students run it with a
bare Python and torch.
"""
