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
FORCE       ?=
CONFIG      ?=
SHOW        ?=
NBGRADER_COURSE ?= dist/nbgrader-course

.PHONY: help venv grade release check check-fast test stubs submit gradescope nbgrader-course bench lock clean

help:
	@echo "make grade       grade the sample submissions (SUBMISSIONS=PATH OUT=DIR to grade others;"
	@echo "                 JOBS=N, CONFIG=YAML, FORCE=1 regrades every report instead of resuming)"
	@echo "make release     write OUT/release/: the feedback students may see, for Canvas and Moodle"
	@echo "                 (SHOW=after_due_date or after_published releases those tests too)"
	@echo "make check       run the kit's own tests (all of them: what CI runs)"
	@echo "make check-fast  the same without the tests marked slow, for the edit-test loop"
	@echo "make test        run the public tests on assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make stubs       regenerate the student stubs, playground.ipynb and otter checks (nbgrader)"
	@echo "make submit      build submission.zip from assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make gradescope  build dist/autograder.zip for Gradescope"
	@echo "make nbgrader-course  write an nbgrader course folder (NBGRADER_COURSE=DIR, default dist/nbgrader-course)"
	@echo "make bench       measure the grader against a torch import"
	@echo "make clean       remove what the kit can rebuild (caches, dist/autograder.zip, submission.zip);"
	@echo "                 never reports or an nbgrader course: delete those yourself"

venv: $(STAMP)

$(STAMP): requirements/kit.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/kit.lock
	@rm -f $(VENV)/.installed-*
	@touch $@

grade: $(STAMP)
	$(PY) -m autograder grade $(SUBMISSIONS) --out $(OUT) $(if $(JOBS),--jobs $(JOBS)) \
		$(if $(CONFIG),--config $(CONFIG)) $(if $(FORCE),--force)

release: $(STAMP)
	$(PY) -m autograder release $(OUT) $(if $(SHOW),--show $(SHOW))

# -rs: every skipped test is listed with its reason (a missing tool, not root, ...).
check: $(STAMP)
	$(PY) -m pytest tests -rs

# Skips the tests marked `slow` (nbgrader, otter, notebooks, the hostile and fairness batches,
# the clean container, the bench); `make check` stays the complete suite.
check-fast: $(STAMP)
	$(PY) -m pytest tests -rs -m "not slow" --strict-markers

test: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -c assignment/tests/pytest.ini assignment/tests --submission=$(SUBMISSION)

stubs: $(STAMP)
	$(PY) -m autograder.platforms.generate

submit: $(STAMP)
	$(PY) assignment/submit.py $(SUBMISSION)

gradescope: $(STAMP)
	$(PY) -m autograder.platforms.gradescope build

nbgrader-course: $(STAMP)
	$(PY) -m autograder.platforms.nbgrader_course $(NBGRADER_COURSE)

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
	$(PY) -m autograder.platforms.gradescope lock

# Only what the kit rebuilds. Never OUT, reports/, an nbgrader course or anything else under dist/:
# they hold grades (gradebook.db, submitted/, results.json) that no command can make again.
REBUILDABLE := .pytest_cache dist/autograder.zip submission.zip assignment/submission.zip bench/tmp
KIT_CODE    := autograder tests tests_hidden solution assignment bench examples
KEPT        := $(sort reports $(OUT) $(NBGRADER_COURSE))

clean:
	rm -rf $(REBUILDABLE)
	find $(KIT_CODE) -name __pycache__ -type d -prune -exec rm -rf {} +
	@rmdir dist 2>/dev/null || true
	@for kept in $(KEPT); do test ! -e "$$kept" || echo "kept $$kept (grades: delete it yourself when you no longer need it)"; done
