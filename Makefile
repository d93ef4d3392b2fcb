# Attention from Scratch: the assignment kit.
# `make grade` and `make check` do all the set-up themselves (they create .venv first).

PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed-$(shell cksum < requirements/kit.lock | cut -d' ' -f1)
SUBMISSIONS ?= examples/submissions
OUT         ?= reports
SUBMISSION  ?= assignment
JOBS        ?=
NBGRADER_COURSE ?= dist/nbgrader-course

.PHONY: help venv grade check check-fast test stubs submit gradescope nbgrader-course bench lock clean

help:
	@echo "make grade       grade the sample submissions (SUBMISSIONS=PATH OUT=DIR to grade others)"
	@echo "make check       run the kit's own tests (all of them: what CI runs)"
	@echo "make check-fast  the same without the tests marked slow, for the edit-test loop"
	@echo "make test        run the public tests on assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make stubs       regenerate the student stubs, playground.ipynb and otter checks (nbgrader)"
	@echo "make submit      build submission.zip from assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make gradescope  build dist/autograder.zip for Gradescope"
	@echo "make nbgrader-course  write an nbgrader course folder (NBGRADER_COURSE=DIR, default dist/nbgrader-course)"
	@echo "make bench       measure the grader against a torch import"

venv: $(STAMP)

$(STAMP): requirements/kit.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/kit.lock
	@rm -f $(VENV)/.installed-*
	@touch $@

grade: $(STAMP)
	$(PY) -m autograder grade $(SUBMISSIONS) --out $(OUT) $(if $(JOBS),--jobs $(JOBS))

check: $(STAMP)
	$(PY) -m pytest tests

# Skips the tests marked `slow` (nbgrader, otter, notebooks, the hostile and fairness batches,
# the clean container, the bench); `make check` stays the complete suite.
check-fast: $(STAMP)
	$(PY) -m pytest tests -m "not slow" --strict-markers

test: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -c assignment/tests/pytest.ini assignment/tests --submission=$(SUBMISSION)

stubs: $(STAMP)
	$(PY) -m autograder.generate

submit: $(STAMP)
	$(PY) assignment/submit.py $(SUBMISSION)

gradescope: $(STAMP)
	$(PY) -m autograder.gradescope build

nbgrader-course: $(STAMP)
	$(PY) -m autograder.nbgrader_course $(NBGRADER_COURSE)

bench: $(STAMP)
	$(PY) bench/run.py

# Rewrite the locks: kit.lock from kit.in in a throwaway venv (needs the package registry), then
# requirements/gradescope.lock, the Gradescope image's runtime subset of it.
lock:
	rm -rf /tmp/kit-lock-venv && $(PYTHON) -m venv /tmp/kit-lock-venv
	/tmp/kit-lock-venv/bin/pip install --quiet -r requirements/kit.in
	( echo "# Generated from requirements/kit.in with 'pip freeze' in a fresh venv; 'make lock' rewrites it."; \
	  /tmp/kit-lock-venv/bin/pip freeze --all | grep -v '^pip==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/' ) > requirements/kit.lock
	$(MAKE) venv
	$(PY) -m autograder.gradescope lock

clean:
	rm -rf $(OUT) dist .pytest_cache
