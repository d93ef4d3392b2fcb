"""Find the submissions in the PATHs given to ``grade``.

A PATH is one submission (a folder or a .zip) or a batch (a folder or .zip holding one sub-folder or .zip per
submission). In the "auto" layout a folder is one submission when attention.py or mha.py sits in it, or down a
single chain of sub-folders (at most ``MAX_DEPTH`` deep, as in staging); otherwise each sub-folder or zip in it
is one submission, even an empty or broken one (its report then says what is missing). "single" and "batch"
force either reading. Wrapper folders (a zip that holds one folder) are looked through.

**An upload is never an export.** Who handed a submission in, and when, is read only from an LMS download the
instructor named as one (``export``: "gradescope", "canvas" or "moodle", ``--export`` on the command line),
and only from the first PATH: Gradescope's ``submission_metadata.yml``, Canvas's or Moodle's names (lms.py), at
the top of that PATH. Nothing else is ever read as a class: a PATH given without ``export`` whose top looks like
a download is refused in one line (a student's zip holding a forged ``submission_metadata.yml``, or files named
the way Canvas names a download's, would otherwise name her classmates and set hand-in times), and a member of
a batch, a .zip given beside other PATHs, or one submission of a download is one submission, whatever it holds.
A folder holding one zip and nothing else is read as that zip (Canvas's submissions.zip saved alone, named with
``export``, is the class; alice/submission.zip is alice's upload).

Nothing below a PATH is followed if it is a symlink. Standard library (and PyYAML) only.
"""
import atexit
import datetime
import os
import shutil
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, replace

import yaml

from autograder.grading import lms
from autograder.grading.stage import MAX_DEPTH, ExtractionStopped, extract_all, find_candidates, is_ignored_dir

LAYOUTS = ("auto", "single", "batch")
EXPORTS = ("gradescope", "canvas", "moodle")  # the LMS downloads whose layout names the students
METADATA = "submission_metadata.yml"
GRADESCOPE_PREFIX = "submission_"
BATCH_ZIP_MAX_BYTES = 4 * 2**30   # a whole class's export, PDFs and all
BATCH_ZIP_MAX_FILES = 200_000
# Gradescope's metadata for a class of thousands is a few MB (one entry of a dozen values per
# submission); a file past these bounds is not an export, and parsing it would cost the grader
# hundreds of bytes per YAML node.
METADATA_MAX_BYTES = 8 * 2**20
METADATA_MAX_NODES = 400_000
SUBMITTER_FIELD_CHARS = 200  # a name, an email or a student id: longer is cut, with an ellipsis


class Found(list):
    """The SubmissionSources discovered, with ``notes``: one line per thing the instructor should know that is not
    a submission's own problem (a file of an LMS download that fits no naming grammar: named, not graded)."""

    def __init__(self, sources=(), notes=()):
        super().__init__(sources)
        self.notes = list(notes)


class UsageError(Exception):
    """A PATH or option the grader cannot use; the message is one line for the command line."""


@dataclass(frozen=True)
class Submitter:
    name: str
    email: str
    sid: str
    lms: str = ""     # "canvas" or "moodle" when the export named the student (lms.py)
    lms_id: str = ""  # Canvas's user id or Moodle's participant id: what its import matches
    late: bool = False  # the export marked the submission late (Canvas's LATE_)
    submitted_at: str = ""  # when the export says it was submitted (Gradescope's created_at), as it wrote it
    lms_file_id: str = ""  # Canvas: one submitted file's attachment id (reports.release names feedback by it)
    lms_file_name: str = ""  # Canvas: that file's own name, under which its Re-Upload shows the feedback
    anonymous_id: str = ""  # Canvas, graded anonymously: the submission's anonymous id (then lms_id is unknown)


@dataclass(frozen=True)
class SubmissionSource:
    id: str                 # report folder name: sub-folder name, zip name without .zip, or Gradescope id
    path: str               # a folder or a .zip file (absolute)
    submitters: tuple = ()  # Submitter tuples, from Gradescope metadata; empty otherwise
    renamed_from: str = None  # the name it came with, when that was not safe as a report folder


# Files the grader writes next to the report folders: no submission may take their names.
CLASS_FILES = ("gradebook.csv", "summary.md", "summary.html", "summary-anonymous.html", "import-canvas.csv",
               "import-moodle.csv", "adjustments.csv", "history.csv", "extensions.csv", "release",
               "similarity.html", "similarity.csv")


@contextmanager
def discovered(paths, layout="auto", export=None):
    """``discover`` with a scratch folder for extracted zips, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="autograder-discover-") as scratch:
        yield discover(paths, layout, scratch=scratch, export=export)


def discover(paths, layout="auto", scratch=None, export=None):
    """The submissions in `paths`, each PATH's sorted by id, with ids made unique.

    With `export` (one of EXPORTS), the first PATH is read as that LMS's download, and its layout names the
    students; every other PATH, and every PATH without `export`, names nobody, and one whose top looks like a
    download is refused (UsageError) rather than guessed at. A zip holding a batch is extracted into a new folder
    inside `scratch`, which the caller owns and removes once grading is done (``discovered`` does both). Without
    `scratch`, a temporary folder is made and removed when the process exits.
    """
    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r} (choose one of {', '.join(LAYOUTS)})")
    if export is not None and export not in EXPORTS:
        raise UsageError(f"unknown --export {export!r} (choose one of {', '.join(EXPORTS)})")
    if export is not None and layout != "auto":
        raise UsageError(f"--export {export} reads the download's own layout: give it without --{layout}")
    if not paths:
        raise UsageError("no submission PATH given")
    scratch = _Scratch(scratch)
    sources, notes = [], []
    for n, path in enumerate(paths):
        if export and n == 0:
            found = _read_export(path, export, scratch, notes)
        else:
            # A .zip beside other PATHs is an upload graded beside the class: one submission, never opened here.
            zip_layout = "single" if len(paths) > 1 and layout == "auto" else layout
            found = _read_path(path, layout, zip_layout, scratch, export)
        sources += sorted(found, key=lambda s: (s.id, s.path))
    return Found(_unique([_safe(source) for source in sources]), notes)


# --- one PATH, which names nobody ---------------------------------------------------------------

def _read_path(path, layout, zip_layout, scratch, export):
    real = _real(path)
    if os.path.isdir(real):
        return _read_folder(path, real, _name(real), layout, zip_layout, scratch, export)
    if not zipfile.is_zipfile(real):
        ends_in_zip = real.lower().endswith(".zip")
        raise UsageError(f"not a zip file: {path}" if ends_in_zip else f"not a folder or .zip file: {path}")
    return _read_zip(path, real, zip_layout, scratch, export)


def _real(path):
    """The PATH itself may be a symlink; nothing below it is followed."""
    if not os.path.lexists(path):
        raise UsageError(f"no such file or folder: {path}")
    real = os.path.realpath(path)
    if not (os.path.isdir(real) or os.path.isfile(real)):
        raise UsageError(f"not a folder or .zip file: {path}")
    return real


def _read_zip(path, real, layout, scratch, export):
    """The submissions of a zip PATH: one, or a batch of plain uploads."""
    zip_id = _stem(os.path.basename(real)) or "submission"
    if layout == "single":
        return [SubmissionSource(zip_id, real)]
    folder = _extract(path, real, scratch)
    root = _unwrap_zip(folder) if layout == "batch" else _batch_root(folder)
    if root is not None and layout == "auto":
        _refuse_lookalike(path, _looks_like(root), export)
    if root is None:  # one submission: staging reads the zip itself and reports its problems
        shutil.rmtree(folder, ignore_errors=True)
        return [SubmissionSource(zip_id, real)]
    return _members(root, path, layout == "batch")


def _read_folder(path, folder, folder_id, layout, zip_layout, scratch, export):
    if layout == "single":
        return [SubmissionSource(folder_id, folder)]
    lone = _lone_zip(folder) if layout == "auto" else None
    if lone:  # alice/submission.zip, what `make submit` builds: one upload, however many folders it holds
        if zip_layout == "auto":  # read from its names alone, never extracted here (staging reads it, bounded)
            _refuse_lookalike(lone, _zip_looks_like(lone), export)
        return [SubmissionSource(folder_id, lone)]
    root = folder if layout == "batch" else _batch_root(folder)
    if root is None:
        return [SubmissionSource(folder_id, folder)]
    if layout == "auto":
        _refuse_lookalike(path, _looks_like(root), export)
    return _members(root, folder, layout == "batch")


def _extract(path, real, scratch):
    folder = scratch.new_folder()
    try:
        extract_all(real, folder, BATCH_ZIP_MAX_BYTES, BATCH_ZIP_MAX_FILES)
    except zipfile.BadZipFile:
        raise UsageError(f"not a zip file: {path}") from None
    except ExtractionStopped as e:
        raise UsageError(f"{path}: {e}") from None
    return folder


def _batch_root(folder):
    """None when `folder` is one submission, else the folder whose entries are submissions."""
    current = folder
    for depth in range(MAX_DEPTH + 1):
        if find_candidates(current, max_depth=0):
            return None
        if _looks_like(current):
            return current
        folders, zips = _entries(current)
        if len(folders) != 1 or zips or depth == MAX_DEPTH:
            break
        current = folders[0][1]  # a wrapper folder: look through it
    folders, zips = _entries(current)
    return current if folders or zips else None  # nothing there: one submission, files missing


def _unwrap_zip(folder):
    """With --layout batch, a zip's single top folder is a wrapper unless it holds the files."""
    folders, zips = _entries(folder)
    if len(folders) == 1 and not zips and not find_candidates(folders[0][1], max_depth=0):
        return folders[0][1]
    return folder


def _members(root, shown, required):
    """One SubmissionSource per sub-folder or zip of `root`, named by it, naming nobody."""
    folders, zips = _entries(root)
    if required and not folders and not zips:
        raise UsageError(f"no submissions in {shown}: expected one sub-folder or .zip per submission")
    sources = []
    for name, path in folders + zips:
        if os.path.isdir(path):
            path = _lone_zip(path) or path
        sources.append(SubmissionSource(name, os.path.abspath(path)))
    return sources


# --- what looks like a download, and is refused unless named ------------------------------------

KIND_NAMES = {"gradescope": "Gradescope export", lms.CANVAS: "Canvas download", lms.MOODLE: "Moodle download"}
KIND_SIGNS = {"gradescope": f"a {METADATA} at its top",
              lms.CANVAS: "files named as Canvas names a download's",
              lms.MOODLE: "folders or files named as Moodle names a download's"}


def _looks_like(folder):
    """The export kind whose layout the top of `folder` has (what would name students if read as one), or None."""
    folders = [name for name, _ in _entries(folder)[0]]
    return _names_look_like([name for name, _ in _plain_files(folder)], folders,
                            os.path.lexists(os.path.join(folder, METADATA)))


def _names_look_like(files, folders, metadata):
    """``_looks_like`` from a top's names: its files (hidden ones left out), its folders, whether a METADATA is
    there."""
    if metadata:
        return "gradescope"
    flat = None if folders else lms.flat_groups([(name, "") for name in files])
    if flat:
        return flat.lms
    if any(lms.moodle_folder(name) for name in folders):
        return lms.MOODLE
    return None


def _zip_looks_like(path):
    """``_looks_like`` for the top of a zip's contents (through wrapper folders, as ``_batch_root`` looks), read
    from its entry names without extracting anything; None also for a zip that holds the files at its top."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [name.replace("\\", "/") for name in archive.namelist()[:BATCH_ZIP_MAX_FILES]]
    except (OSError, zipfile.BadZipFile, ValueError):
        return None  # staging reads it and says why it cannot
    prefix = ""
    for _ in range(MAX_DEPTH + 1):
        files, folders = set(), set()
        for name in names:
            head, below, _ = name[len(prefix):].partition("/") if name.startswith(prefix) else ("", "", "")
            if head and not head.startswith(".") and not is_ignored_dir(head):
                (folders if below else files).add(head)
        if files & {"attention.py", "mha.py"}:
            return None
        kind = _names_look_like(sorted(files), sorted(folders), METADATA in files)
        if kind or len(folders) != 1 or any(name.lower().endswith(".zip") for name in files):
            return kind
        prefix += folders.pop() + "/"
    return None


def _refuse_lookalike(path, kind, export):
    """Refuse, in one line, a PATH not named as a download whose top looks like one (`kind`): nothing of a
    student's upload may name students or set hand-in times, and grading it as one submission silently is a guess
    too."""
    if kind is None:
        return
    seen = f"{path} looks like a {KIND_NAMES[kind]} ({KIND_SIGNS[kind]})"
    if export:
        raise UsageError(f"{seen}, and only the first PATH is read as a download (--export {export}): grade it in "
                         "a run of its own, with --single to grade it as one submission")
    raise UsageError(f"{seen}: --export {kind} (make grade EXPORT={kind}) grades it as the class, with the names "
                     "and times it holds; --single grades it as one submission")


# --- the download the instructor named (--export) ------------------------------------------------

def _read_export(path, kind, scratch, notes):
    """The submissions of the first PATH, read as `kind`'s download: its top (through wrapper folders, or the
    one zip a folder holds) must have that LMS's layout, which alone names the students."""
    real = _real(path)
    lone = _lone_zip(real) if os.path.isdir(real) else None
    if os.path.isdir(real) and not (lone and zipfile.is_zipfile(lone)):
        folder = real
    elif zipfile.is_zipfile(lone or real):
        folder = _extract(lone or path, lone or real, scratch)
    else:
        raise UsageError(f"--export {kind}: {path} is not a folder or .zip file")
    root = _export_root(folder, kind)
    if root is None:
        raise UsageError(f"--export {kind}: {path} is not a {KIND_NAMES[kind]}: it has no {KIND_SIGNS[kind]}")
    if kind == "gradescope":
        return _gradescope_members(root, path, notes)
    return _lms_members(root, kind, path, scratch, notes)


def _export_root(folder, kind):
    """The folder at the top of `folder`, through wrapper folders, whose layout is `kind`'s, or None."""
    current = folder
    for _ in range(MAX_DEPTH + 1):
        if _has_layout(current, kind):
            return current
        folders, zips = _entries(current)
        if len(folders) != 1 or zips or _plain_files(current):
            return None
        current = folders[0][1]
    return None


def _has_layout(folder, kind):
    if kind == "gradescope":
        metadata = os.path.join(folder, METADATA)
        return os.path.isfile(metadata) and not os.path.islink(metadata)
    if lms.flat_groups(_plain_files(folder), grammar=kind):
        return True
    return kind == lms.MOODLE and any(lms.moodle_folder(name) for name, _ in _entries(folder)[0])


def _gradescope_members(root, shown, notes):
    """One submission per sub-folder or zip; a ``submission_<id>`` one is named by the export's metadata."""
    metadata = _load_metadata(root)
    notes.append(f"{_shown(shown)}: read as a Gradescope export: {_count(len(metadata), 'submission')} named by "
                 f"its {METADATA} (names, emails, SIDs, hand-in times)")
    sources = []
    for source in _members(root, shown, required=True):
        name = source.id
        if name.startswith(GRADESCOPE_PREFIX) and name != GRADESCOPE_PREFIX:
            source = replace(source, id=name[len(GRADESCOPE_PREFIX):], submitters=metadata.get(name, ()))
        sources.append(source)
    return sources


def _lms_members(root, kind, shown, scratch, notes):
    """One submission per student of Canvas's or Moodle's download, named by that LMS's grammar alone (lms.py);
    anything at the top that fits no grammar is named in one line and not graded."""
    flat = lms.flat_groups(_plain_files(root), grammar=kind)
    unplaced = list(flat.unplaced) if flat else [name for name, _ in _plain_files(root)]
    folders = _entries(root)[0]
    sources, participants = [], 0
    if kind == lms.MOODLE:
        sources, strays = _moodle_folders(folders)
        participants = len(sources)
        unplaced += strays
    else:
        unplaced += [name for name, _ in folders]
    if flat:
        sources += _flat_members(flat.groups, scratch)
        students = _count(len(flat.groups), "student")
        anonymous = sum(1 for group in flat.groups.values() if group[0][0].anonymous_id)
        notes.append(f"{_shown(shown)}: read as a {kind.capitalize()} download: {students}, named by its file names"
                     + (f" ({anonymous} by Canvas's anonymous id alone: import-canvas.csv cannot name them; "
                        "docs/reference/lms.md, 'Anonymous grading on Canvas')" if anonymous else ""))
    if participants:
        notes.append(f"{_shown(shown)}: read as a Moodle download: {_count(participants, 'participant')}, named by "
                     "its folder names")
    if unplaced:
        notes.append(f"not graded: {_listed(unplaced)} in {_shown(shown)} (not named {lms.GRAMMAR[kind]}); "
                     "the rest of the class is graded")
    return sources


def _moodle_folders(folders):
    """(one SubmissionSource per participant of Moodle's per-student folders, names of the other folders)."""
    sources, strays, seen = [], [], {}  # seen: {participant id: index of their submission}
    for name, path in folders:
        who = lms.moodle_folder(name)
        if who is None:
            strays.append(name)
            continue
        source = SubmissionSource(f"{who.name}_{who.user}", os.path.abspath(_lone_zip(path) or path),
                                  (_lms_submitter(who),))
        kept = seen.setdefault(who.user, len(sources))
        if kept == len(sources):
            sources.append(source)
        elif not _moodle_upload(sources[kept].path):  # a participant's plugin folders are one submission: the
            sources[kept] = source                     # upload's (file), not the online text's
    return sources, strays


def _lone_zip(folder):
    """The path of the one .zip file that is all `folder` holds (hidden files and __MACOSX aside), or None."""
    folders, zips = _entries(folder)
    if folders or len(zips) != 1 or _plain_files(folder, skip_zips=True):
        return None
    return zips[0][1]


def _plain_files(folder, skip_zips=False):
    """(name, path) of the regular files in `folder`, hidden ones and symlinks left out."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    return [(e.name, e.path) for e in entries
            if not e.name.startswith(".") and e.is_file(follow_symlinks=False) and not e.is_symlink()
            and not (skip_zips and e.name.lower().endswith(".zip"))]


def _entries(folder):
    """(name, path) of the sub-folders and of the zip files in `folder`, symlinks left out."""
    folders, zips = [], []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return folders, zips
    for entry in entries:
        if is_ignored_dir(entry.name) or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            folders.append((entry.name, entry.path))
        elif entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(".zip"):
            zips.append((_stem(entry.name), entry.path))
    return folders, zips


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _shown(path):
    return os.path.basename(str(path).rstrip(os.sep)) or str(path)


def _moodle_upload(path):
    """Whether a Moodle plugin folder (or the zip it held) is the file submission's, not the online text's."""
    folder = os.path.basename(os.path.dirname(path) if path.lower().endswith(".zip") and os.path.isfile(path) else path)
    return folder.endswith("_assignsubmission_file_")


def _listed(names, at_most=3):
    shown = ", ".join(names[:at_most])
    return shown + (f" and {len(names) - at_most} more" if len(names) > at_most else "")


def _flat_members(groups, scratch):
    """A folder per student of a flat download, in the scratch folder, holding their files under their own
    names (or that student's one zip)."""
    sources = []
    for members in groups.values():
        who = members[0][0]
        folder = os.path.join(scratch.new_folder(), "files")
        lms.regroup(members, folder)
        path = _lone_zip(folder) or folder
        late = any(w.late for w, _ in members)
        uploads = sorted((w for w, _ in members if w.file_id), key=lambda w: (_FEEDBACK_CARRIERS.get(
            os.path.splitext(w.file.lower())[1], len(_FEEDBACK_CARRIERS)), w.file, w.file_id))
        carrier = uploads[0] if uploads else None
        report = f"{who.name}_{who.user}" if who.name else who.user  # an anonymous one: anon_<id>
        sources.append(SubmissionSource(report, path, (_lms_submitter(who, late, carrier),)))
    return sources


# Canvas shows re-uploaded feedback under the submitted file's own name (assignment.rb: display_name from the
# attachment): the one it is attached to is the file whose kind the feedback can be written as, .py first.
_FEEDBACK_CARRIERS = {".py": 0, ".ipynb": 1, ".zip": 2, ".html": 3, ".md": 4, ".txt": 5}


def _lms_submitter(who, late=False, carrier=None):
    """A Submitter from an LMS name; an anonymous Canvas one has no user id (``lms_id`` empty), only its
    ``anonymous_id``, which Canvas's re-upload reads and its gradebook import cannot."""
    return Submitter(bounded_text(who.name), "", "", who.lms, "" if who.anonymous_id else bounded_text(who.user),
                     late, lms_file_id=bounded_text(carrier.file_id) if carrier else "",
                     lms_file_name=bounded_text(carrier.file) if carrier else "",
                     anonymous_id=bounded_text(who.anonymous_id))


# --- Gradescope metadata --------------------------------------------------------------------

class _MetadataLoader(yaml.SafeLoader):
    """A safe loader that reads Ruby-tagged values (``!ruby/object:BigDecimal ...``,
    ``!ruby/hash:...``) from Gradescope's Rails export as plain data instead of failing.

    Aliases (``*name``) are refused: each one repeats a whole subtree, so 600 bytes of them can
    name a string of 700 million characters. Gradescope's exports have none. Nodes are counted."""

    def __init__(self, stream):
        super().__init__(stream)
        self.nodes = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed",
                                              self.peek_event().start_mark)
        self.nodes += 1
        if self.nodes > METADATA_MAX_NODES:
            raise yaml.composer.ComposerError(None, None, f"more than {METADATA_MAX_NODES} values",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


def _untagged(loader, suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_MetadataLoader.add_multi_constructor("!", _untagged)


def _load_metadata(root):
    """{"submission_<id>": (Submitter, ...)} from `root`'s submission_metadata.yml, or None."""
    path = os.path.join(root, METADATA)
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            raw = f.read(METADATA_MAX_BYTES + 1)  # never more, whatever the file is
        if len(raw) > METADATA_MAX_BYTES:
            raise UsageError(f"cannot read {path}: larger than {METADATA_MAX_BYTES >> 20} MiB, "
                             "which no Gradescope export is")
        data = yaml.load(raw.decode("utf-8"), Loader=_MetadataLoader)  # a SafeLoader: no object is built
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read {path}: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise UsageError(f"cannot read {path}: nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError(f"cannot read {path}: expected one submission_<id> entry per submission")
    return {str(key)[:SUBMITTER_FIELD_CHARS]: _submitters(entry) for key, entry in data.items()}


def _submitters(entry):
    people = _field(entry, "submitters") or []
    if not isinstance(people, list):
        return ()
    when = _field(entry, "created_at")  # the submission's time (PyYAML reads it as a datetime)
    when = when.isoformat() if isinstance(when, datetime.datetime) else _text(when)
    return tuple(Submitter(*(_text(_field(p, key)) for key in ("name", "email", "sid")), submitted_at=when)
                 for p in people if isinstance(p, dict))


def _field(mapping, key):
    """Gradescope writes Ruby symbols (``:name:``); accept plain keys too."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(f":{key}", mapping.get(key))


def _text(value):
    """A submitter's field as plain text, at most SUBMITTER_FIELD_CHARS long: a name from a tampered
    file would otherwise fill every report and the gradebook."""
    return bounded_text("" if value is None or isinstance(value, (dict, list)) else str(value))


def bounded_text(text, limit=SUBMITTER_FIELD_CHARS):
    return text if len(text) <= limit else text[:limit - 1] + "…"


# --- helpers --------------------------------------------------------------------------------

def _safe(source):
    """The source under an id that is one plain folder name inside OUT: not ".", "..", a dot-name
    (hidden, or the reports' temp files), a class file's name, or text with control characters."""
    name = "".join(ch for ch in source.id if ch.isprintable() and ch not in "/\\")
    name = name.lstrip(". ").rstrip() or "submission"
    if name.lower() in CLASS_FILES:
        name = f"{name}-submission"
    return source if name == source.id else replace(source, id=name, renamed_from=source.id)


def _unique(sources):
    """Keep the first of each id; later ones get -2, -3, ... (never an id already in use)."""
    taken = {s.id for s in sources}
    seen, unique = set(), []
    for source in sources:
        new_id, n = source.id, 1
        while new_id in seen or (n > 1 and new_id in taken):
            n += 1
            new_id = f"{source.id}-{n}"
        seen.add(new_id)
        taken.add(new_id)
        unique.append(replace(source, id=new_id))
    return unique


def _name(folder):
    return os.path.basename(folder.rstrip(os.sep)) or "submission"


def _stem(file_name):
    return file_name[:-4] if file_name.lower().endswith(".zip") else file_name


class _Scratch:
    """Makes a fresh folder per extracted zip, inside the caller's scratch folder if given."""

    def __init__(self, folder):
        self.folder = folder

    def new_folder(self):
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix="autograder-discover-")
            atexit.register(_remove_in, os.getpid(), self.folder)
        return tempfile.mkdtemp(prefix="zip-", dir=self.folder)


def _remove_in(pid, folder):
    if os.getpid() == pid:  # a forked child exiting must not pull the folder from under us
        shutil.rmtree(folder, ignore_errors=True)
