# Attention from Scratch: the assignment kit.
# `make grade` and `make check` do all the set-up themselves (they create .venv first).

PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
# Two environments in one venv: what grading needs (grade.lock), and the instructor's tools on top
# (tools.lock: nbgrader, Jupyter, otter-grader), installed only by the targets that use them.
GRADE_LOCK  := requirements/grade.lock
TOOLS_LOCK  := requirements/tools.lock
GRADE_STAMP := $(VENV)/.grade-$(shell cksum < $(GRADE_LOCK) | cut -d' ' -f1)
TOOLS_STAMP := $(VENV)/.tools-$(shell cksum < $(TOOLS_LOCK) | cut -d' ' -f1)
# torch's CPU build, from PyTorch's own index as PyTorch documents it: on Linux x86_64 the package
# index serves the CUDA build (several GB with NVIDIA's packages), which grading never uses.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
SUBMISSIONS ?= examples/submissions
OUT         ?= reports
SUBMISSION  ?= assignment
JOBS        ?=
# The kind of class download SUBMISSIONS is (gradescope, canvas or moodle): only then are students named by it.
EXPORT      ?=
FORCE       ?=
CONFIG      ?=
SHOW        ?=
# The nbgrader course (its gradebook, the students' submissions) is the instructor's, like reports/:
# not under dist/ (the kit's build output), never removed by make clean, git-ignored (students' data).
NBGRADER_COURSE ?= course

.PHONY: help venv grade release check check-fast validate test stubs submit gradescope nbgrader-course bench lock clean

help:
	@echo "make grade       grade the sample submissions (SUBMISSIONS=PATH OUT=DIR to grade others;"
	@echo "                 EXPORT=gradescope|canvas|moodle when PATH is that LMS's download of the class;"
	@echo "                 JOBS=N, CONFIG=YAML, FORCE=1 regrades every report instead of resuming)"
	@echo "make release     write OUT/release/: the feedback students may see, for Canvas and Moodle"
	@echo "                 (SHOW=after_due_date or after_published releases those tests too)"
	@echo "make check       run the kit's own tests (all of them: what CI runs)"
	@echo "make check-fast  the same without the tests marked slow, for the edit-test loop"
	@echo "make validate    the check after a change to the lab: reference full marks, stubs 0, points and"
	@echo "                 parts, generated files in sync (one line per problem)"
	@echo "make test        run the public tests on assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make stubs       regenerate the student stubs, playground.ipynb and otter checks (nbgrader)"
	@echo "make submit      build submission.zip from assignment/ (SUBMISSION=DIR for another folder)"
	@echo "make gradescope  build dist/autograder.zip for Gradescope"
	@echo "make nbgrader-course  write or update an nbgrader course and its release (NBGRADER_COURSE=DIR, default course)"
	@echo "make bench       measure the grader against a torch import"
	@echo "make clean       remove what the kit can rebuild (caches, dist/autograder.zip); never reports,"
	@echo "                 an nbgrader course or a submission.zip: delete those yourself"

# --no-compile, then WARM_UP: bytecode only for what grading imports (the grader, the zygote's preload,
# the pictures), written once here, since the zygote (python -B) and a PYTHONDONTWRITEBYTECODE shell never
# write it; compiling all of torch, sympy and matplotlib would add about 190 MB to the venv.
export WARM_UP := import importlib, pytest, numpy, einops, jaxtyping, yaml, rich.console, rich.table, rich.progress; \
	import rich._emoji_codes, _pytest.config; [importlib.import_module(f'_pytest.{name}') for name in \
	  _pytest.config.default_plugins]; \
	import autograder.cli, autograder.grading.batch, autograder.grading.runner, autograder.grading.by_hand; \
	import autograder.platforms.gradescope, autograder.platforms.gradescope_zip; \
	from autograder.containment import zygote; zygote.preload(); \
	from autograder.reports import pictures; pictures.preload()

# $(call cpu_torch,PIP,PIN): on Linux x86_64, install torch's CPU build first (no dependencies: the lock
# pins those). An index that does not answer costs seconds (--timeout 10 --retries 0), not minutes, and
# the lock's plain pin follows: a local wheel or a pip cache may hold the CPU build; if not, it says so.
cpu_torch = if [ "$$(uname -sm)" = "Linux x86_64" ]; then \
	  $(1) install --quiet --disable-pip-version-check --no-compile --no-deps --timeout 10 --retries 0 \
	    --index-url $(TORCH_INDEX) "$(2)" || \
	  echo "note: PyTorch's CPU index ($(TORCH_INDEX)) did not answer; torch comes from the package index" \
	       "(on Linux x86_64 that is its CUDA build, several GB)"; fi

# The whole development environment: what grading needs and the instructor's tools.
venv: $(GRADE_STAMP) $(TOOLS_STAMP)

$(GRADE_STAMP): $(GRADE_LOCK)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(call cpu_torch,$(PY) -m pip,$(shell grep '^torch==' $(GRADE_LOCK)))
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r $(GRADE_LOCK)
	@env -u PYTHONDONTWRITEBYTECODE $(PY) -c "$$WARM_UP"
	@rm -f $(VENV)/.grade-* $(VENV)/.installed-*
	@touch $@

# -c: a tool can never move a package grading uses off its pin.
$(TOOLS_STAMP): $(TOOLS_LOCK) $(GRADE_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(TOOLS_LOCK) -c $(GRADE_LOCK)
	@rm -f $(VENV)/.tools-*
	@touch $@

grade: $(GRADE_STAMP)
	$(PY) -m autograder grade$(if $(EXPORT), --export $(EXPORT)) $(SUBMISSIONS) --out $(OUT) $(if $(JOBS),--jobs $(JOBS)) \
		$(if $(CONFIG),--config $(CONFIG)) $(if $(FORCE),--force)

release: $(GRADE_STAMP)
	$(PY) -m autograder release $(OUT) $(if $(SHOW),--show $(SHOW))

# -rs: every skipped test is listed with its reason (a missing tool, not root, ...).
check: $(TOOLS_STAMP)
	$(PY) -m pytest tests -rs

# Skips the tests marked `slow` (nbgrader, otter, notebooks, the hostile and fairness batches,
# the clean container, the bench); `make check` stays the complete suite.
check-fast: $(TOOLS_STAMP)
	$(PY) -m pytest tests -rs -m "not slow" --strict-markers

validate: $(TOOLS_STAMP)
	$(PY) -m autograder.platforms.validate

test: $(GRADE_STAMP)
	$(PY) -m pytest -p no:cacheprovider -c assignment/tests/pytest.ini assignment/tests --submission=$(SUBMISSION)

stubs: $(TOOLS_STAMP)
	$(PY) -m autograder.platforms.generate $(if $(FORCE),--force)

submit: $(GRADE_STAMP)
	$(PY) assignment/submit.py $(SUBMISSION)

gradescope: $(GRADE_STAMP)
	$(PY) -m autograder.platforms.gradescope build

nbgrader-course: $(TOOLS_STAMP)
	$(PY) -m autograder.platforms.nbgrader_course $(NBGRADER_COURSE)

# The instructor's tools too: one row times `make validate`, which checks the files nbgrader generates.
bench: $(TOOLS_STAMP)
	$(PY) bench/run.py

# Rewrite the locks from the .in files in a throwaway venv (needs the package registry): grade.lock
# from grade.in, then tools.lock from tools.in (only what grade.lock does not pin already), then
# requirements/gradescope.lock, the Gradescope image's runtime subset of grade.lock.
LOCK_VENV := /tmp/kit-lock-venv
FREEZE    := $(LOCK_VENV)/bin/pip freeze --all | grep -v '^pip==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'
lock:
	rm -rf $(LOCK_VENV) && $(PYTHON) -m venv $(LOCK_VENV)
	@$(call cpu_torch,$(LOCK_VENV)/bin/pip,$(shell grep '^torch==' requirements/grade.in))
	$(LOCK_VENV)/bin/pip install --quiet -r requirements/grade.in
	( echo "# Generated from requirements/grade.in with 'pip freeze' in a fresh venv; 'make lock' rewrites it."; \
	  $(FREEZE) ) > $(GRADE_LOCK)
	$(LOCK_VENV)/bin/pip install --quiet -r requirements/tools.in -c $(GRADE_LOCK)
	( echo "# Generated from requirements/tools.in: what it needs beyond grade.lock; 'make lock' rewrites it."; \
	  $(FREEZE) | grep -vxF -f $(GRADE_LOCK) ) > $(TOOLS_LOCK)
	$(MAKE) venv
	$(PY) -m autograder.platforms.gradescope lock

# Only what the kit rebuilds. Never OUT, reports/, an nbgrader course or anything else under dist/:
# they hold grades (gradebook.db, submitted/, results.json) that no command can make again. Nor a
# submission.zip: `make submit` writes one, but so does a student, and an instructor may save theirs
# here to grade it; the kit cannot tell them apart, so it names them and leaves them.
REBUILDABLE := .pytest_cache dist/autograder.zip bench/tmp
KIT_CODE    := autograder tests tests_hidden solution assignment bench examples
KEPT        := $(sort reports $(OUT) $(NBGRADER_COURSE)) submission.zip assignment/submission.zip

clean:
	rm -rf $(REBUILDABLE)
	find $(KIT_CODE) -name __pycache__ -type d -prune -exec rm -rf {} +
	@rmdir dist 2>/dev/null || true
	@for kept in $(KEPT); do test ! -e "$$kept" || echo "kept $$kept (it may hold grades or a student's work: delete it yourself when you no longer need it)"; done
