"""Stage a submission: copy attention.py and mha.py alone into a fresh private folder.

The sandboxed child imports from the staged folder only, so nothing else a student hands in
(conftest.py, sitecustomize.py, torch.py, *.pth, ...) can shadow a module or run at import.
Symlinks are never followed, files and zips are size-capped, and zip entries that would land
outside their folder are refused. Every problem becomes a one-line, student-readable message.

Standard library only: the batch runner calls this before torch is imported.
"""
import os
import re
import stat
import struct
import tempfile
import zipfile
from dataclasses import dataclass, field

from autograder import rules

SUBMISSION_FILES = ("attention.py", "mha.py")
# Students zip a folder, a folder in a folder, a whole project: the files are found at any depth
# up to this many folders (each level is bounded by the entry cap below, and a zip by its own caps).
MAX_DEPTH = 12
MAX_SCANNED_ENTRIES = 20_000         # files and folders looked at in one submission folder
MAX_FILE_BYTES = 256 * 1024          # per submission file
ZIP_MAX_BYTES = 16 * 1024 * 1024     # all extracted bytes of one submission zip
ZIP_MAX_FILES = 1000                 # entries (files and folders, extracted or not) of one submission zip
ZIP_DIRECTORY_BYTES_PER_ENTRY = 1024 # room in the zip's central directory per allowed entry
IGNORED_DIRS = ("__MACOSX", "__pycache__", "site-packages", "node_modules")
NAMED_AT_MOST = 3                    # other files named in "you uploaded ..."
UPLOAD_HINT = "upload attention.py and mha.py"
# What browsers and LMSs make of a file's name: another case (Attention.py), a copy number from a download
# folder (mha (1).py) or a re-upload (mha-1.py). Such a file is graded, with a note, when the exact name is absent.
_NEAR_NAME = re.compile(r"^(?P<stem>[^/]+?)(?: \(\d+\)|-\d+)?(?P<ext>\.py)$", re.IGNORECASE)
_CHUNK = 64 * 1024


@dataclass
class Staged:
    dir: str                                      # the private folder now holding only the found files
    found: dict = field(default_factory=dict)     # file name -> where it was found (relative path)
    problems: list = field(default_factory=list)  # one-line, student-readable messages


@dataclass(frozen=True)
class Candidate:
    name: str    # the submission file it stands for, e.g. "mha.py"
    path: str    # relative to the searched folder, "/"-separated
    depth: int   # number of folders above it inside the searched folder
    kind: str    # "file", "symlink", "other" (fifo, device, ...) or "misnamed" (a regular file: MHA.py, mha (1).py)

    @property
    def folder(self):
        return self.path.rpartition("/")[0]


@dataclass
class Scan:
    candidates: list = field(default_factory=list)  # Candidate, shallower first, then by path
    others: list = field(default_factory=list)      # paths of the other files, for "you uploaded ..."
    truncated: bool = False                         # MAX_SCANNED_ENTRIES was reached


# --- finding the files ----------------------------------------------------------------------

def is_ignored_dir(name):
    """Folders that never hold a submission: macOS zip junk, caches, installed packages, hidden folders
    (.git, .ipynb_checkpoints, .venv)."""
    return name in IGNORED_DIRS or name.startswith(".")


def submission_name(file_name):
    """The submission file `file_name` stands for ("attention.py" for attention.py, Attention.py, attention (1).py
    or attention-2.py), or None."""
    near = _NEAR_NAME.match(file_name)
    name = f"{near['stem']}{near['ext']}".lower() if near else None
    return name if name in SUBMISSION_FILES else None


def find_candidates(root, max_depth=MAX_DEPTH):
    """Every entry named like a submission file at most `max_depth` folders below `root`.

    The one finder used by staging, discovery and the Gradescope entry point. It never follows a
    symlink (neither to descend nor to classify), and lists shallower candidates first, then by path.
    """
    return scan(root, max_depth).candidates


def scan(root, max_depth=MAX_DEPTH, max_entries=MAX_SCANNED_ENTRIES):
    """The candidates below `root` (``find_candidates``), and the other files met on the way."""
    result, level, left = Scan(), [("", root)], max_entries
    for depth in range(max_depth + 1):
        below = []
        for rel, folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue  # unreadable folder: whatever it holds is reported as missing
            for entry in entries:
                if left == 0:
                    result.truncated = True
                    return result
                left -= 1
                path = f"{rel}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    if not is_ignored_dir(entry.name):
                        below.append((f"{path}/", entry.path))
                elif submission_name(entry.name):
                    name = submission_name(entry.name)
                    result.candidates.append(Candidate(name, path, depth, _kind(entry, name)))
                elif not entry.name.startswith("."):
                    result.others.append(path)
        level = below
    return result


def _kind(entry, name):
    if entry.is_symlink():
        return "symlink"
    if not entry.is_file(follow_symlinks=False):
        return "other"
    return "file" if entry.name == name else "misnamed"


def choose(candidates, root):
    """{name: the Candidate to grade} and the problems met on the way.

    The two files come from one folder when a folder holds both (the shallowest such folder, then
    the first by path): a stray copy elsewhere never splits the pair. Otherwise each is the shallowest
    regular file of its name. Identical copies are no choice at all; different ones are named, with
    the one graded. Without a file of the exact name, a misnamed one (``Attention.py``, ``mha (1).py``) is
    graded, with a note that says so.
    """
    files = [c for c in candidates if c.kind == "file"]
    folders = {c.folder for c in files if c.name == SUBMISSION_FILES[0]} & \
              {c.folder for c in files if c.name == SUBMISSION_FILES[1]}
    pair = min(folders, key=lambda f: (f.count("/") + bool(f), f)) if folders else None
    chosen, problems = {}, []
    for name in SUBMISSION_FILES:
        own = [c for c in candidates if c.name == name]
        problems += [f"{c.path} is a symlink: ignored" for c in own if c.kind == "symlink"]
        problems += [f"{c.path} is not a regular file: ignored" for c in own if c.kind == "other"]
        copies = [c for c in own if c.kind == "file"]
        if not copies:
            misnamed = [c for c in own if c.kind == "misnamed"]
            if misnamed:
                chosen[name] = misnamed[0]
                problems.append(f"graded {misnamed[0].path} as {name}: name the file exactly {name}")
            continue
        pick = next((c for c in copies if c.folder == pair), copies[0])
        chosen[name] = pick
        different = [c for c in copies if c is pick or read_regular(os.path.join(root, c.path)) !=
                     read_regular(os.path.join(root, pick.path))]
        if len(different) > 1:
            why = "from the folder holding both files" if pick.folder == pair else "the shallowest"
            problems.append(f"found {len(different)} different copies of {name} "
                            f"({_listed([c.path for c in different])}): graded {pick.path} ({why})")
    return chosen, problems


def missing(name, candidates):
    """The problem for a submission file that was not found, with a hint if a misnamed one was."""
    misnamed = [c.path for c in candidates if c.name == name and c.kind == "misnamed"]
    hint = f" (found {misnamed[0]}: the file must be named exactly {name})" if misnamed else ""
    return f"{name} is missing{hint}"


def nothing_found(others, problems):
    """The one line for an upload with neither file and nothing named like them: what it held instead."""
    if others:
        return f"you uploaded {_listed(others)}; {UPLOAD_HINT}"
    if problems:  # the upload could not be read (a broken zip, a symlink): that line says why
        return f"no files could be graded: {UPLOAD_HINT}"
    return f"the upload is empty: {UPLOAD_HINT}"


def _listed(paths):
    shown = ", ".join(paths[:NAMED_AT_MOST])
    more = len(paths) - NAMED_AT_MOST
    return shown + (f" and {more} more file{'s' if more > 1 else ''}" if more > 0 else "")


# --- copying them ---------------------------------------------------------------------------

def stage(source, dest):
    """Copy the submission files of `source` (a folder or a .zip) into `dest`.

    `dest` is created and must not exist yet. It ends up with mode 0o755 and the files with
    0o644, so a sandbox user with another uid can read them; nothing else is ever copied.
    """
    os.mkdir(dest, 0o700)
    staged = Staged(dir=dest)
    with tempfile.TemporaryDirectory(prefix="autograder-stage-") as scratch:
        listed = []  # a zip's other entries: its extraction keeps only the submission files
        root = _open_source(source, scratch, staged.problems, listed)
        found = scan(root) if root else Scan()
        if found.truncated:
            staged.problems.append(f"the upload holds more than {MAX_SCANNED_ENTRIES} files and folders: "
                                   "only the first were searched")
        chosen, problems = choose(found.candidates, root)
        staged.problems += problems
        if not found.candidates:
            staged.problems.append(nothing_found(listed + found.others, staged.problems))
        for name in SUBMISSION_FILES:
            pick = chosen.get(name)
            if pick is None:
                if found.candidates:
                    staged.problems.append(missing(name, found.candidates))
            elif _copy(os.path.join(root, pick.path), os.path.join(dest, name), pick.path, staged.problems):
                staged.found[name] = pick.path
    os.chmod(dest, 0o755)
    return staged


def _open_source(source, scratch, problems, listed):
    """The folder to search: `source` itself, or the submission zip extracted into `scratch` (its
    other entries' paths then go to `listed`)."""
    try:
        info = os.lstat(source)
    except OSError:
        problems.append("the submission could not be found")
        return None
    if stat.S_ISLNK(info.st_mode):
        problems.append("the submission is a symlink: ignored")
        return None
    if stat.S_ISDIR(info.st_mode):
        return source
    problems += safe_extract(source, scratch, only=SUBMISSION_FILES, max_file_bytes=MAX_FILE_BYTES, skipped=listed)
    return scratch


def read_regular(path, limit=MAX_FILE_BYTES + 1):
    """The bytes of the regular file at `path`, at most `limit` of them; None if it is not one (a symlink,
    a fifo, a device or a folder is never opened for reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(limit)  # never more, whatever the file claims to be


def _copy(src, dst, shown, problems):
    """Copy one file byte for byte, or explain in `problems` why not."""
    data = read_regular(src)
    if data is None:
        problems.append(f"{shown} could not be read as a regular file (is it a symlink?): ignored")
        return False
    if len(data) > MAX_FILE_BYTES:
        problems.append(f"{shown} is too large (over {human_size(MAX_FILE_BYTES)}): not graded")
        return False
    try:
        rules.decode_source(data, os.path.basename(shown))  # the one reader: what Python reads, it reads
    except ValueError as e:  # copied all the same: the import and the rule check say the same line
        problems.append(str(e))
    _write_new(dst, data, 0o644)
    return True


def human_size(n):
    """256 * 1024 -> '256 KiB'; 1536 -> '1.5 KiB'."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            break
        n /= 1024
    return f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"


def _write_new(path, data, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)  # the umask must not take the sandbox user's read bit
        f.write(data)


# --- zips -----------------------------------------------------------------------------------

class ExtractionStopped(Exception):
    """A cap was reached: what was extracted so far is incomplete."""


def safe_extract(zip_path, dest, max_total_bytes=ZIP_MAX_BYTES, max_files=ZIP_MAX_FILES, only=None,
                 max_file_bytes=None, skipped=None):
    """Extract `zip_path` into the existing folder `dest`; return the problems as messages.

    A zip whose central directory announces more than `max_files` entries, or is larger than
    they need, is refused before it is read. Entries with absolute or `..` paths are refused,
    symlink entries ignored, and at most `max_files` entries are looked at (extracted or not)
    and `max_total_bytes` bytes written (counted as they are decompressed, whatever the zip's
    header claims); a file cut short by that cap is removed and extraction stops. With `only`,
    just the entries whose file name matches one of those names (ignoring case) are extracted.
    With `max_file_bytes`, decompressing an entry stops one byte past it: the file stays, too
    large for any check of that cap (the stager's refuses it), and the other entries are still
    extracted.
    """
    problems = []
    try:
        _extract(zip_path, dest, max_total_bytes, max_files, only, problems, max_file_bytes=max_file_bytes,
                 skipped=skipped)
    except ExtractionStopped as e:
        problems.append(str(e))
    return problems


def extract_all(zip_path, dest, max_total_bytes, max_files):
    """Like `safe_extract`, but raise `ExtractionStopped` (or `zipfile.BadZipFile`) rather
    than return a partial tree: for archives that hold a whole batch."""
    problems = []
    _extract(zip_path, dest, max_total_bytes, max_files, None, problems, strict=True)
    return problems


def _extract(zip_path, dest, max_total_bytes, max_files, only, problems, strict=False, max_file_bytes=None,
             skipped=None):
    name = os.path.basename(zip_path)
    wanted = {n.lower() for n in only} if only else None
    try:
        fd = os.open(zip_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        problems.append(f"{name} could not be opened (is it a symlink?)")
        return
    with os.fdopen(fd, "rb") as raw:
        announced = _check_directory(raw, name, max_files)  # before zipfile reads every entry into memory
        try:
            archive = zipfile.ZipFile(raw)
        except (zipfile.BadZipFile, OSError, ValueError):
            if strict:
                raise zipfile.BadZipFile(f"not a zip file: {zip_path}")
            problems.append(f"{name} is not a valid zip file")
            return
        with archive:
            _check_parsed(archive, name, announced)
            budget = _Budget(max_total_bytes, max_files, max_file_bytes)
            for info in archive.infolist():
                budget.take_entry()  # skipped entries too: each one costs time and memory
                parts = _safe_parts(info.filename)
                if wanted is not None and (not parts or (parts[-1].lower() not in wanted
                                                         and submission_name(parts[-1]) not in wanted)):
                    if skipped is not None and parts and not info.is_dir() and not any(
                            is_ignored_dir(p) for p in parts[:-1]) and not parts[-1].startswith("."):
                        skipped.append("/".join(parts))
                    continue
                problem = _refusal(info, parts)
                if problem:
                    problems.append(problem)
                elif info.is_dir():  # kept: an empty folder in a batch is a submission too
                    _extract_folder(info, os.path.join(dest, *parts), problems)
                else:
                    _extract_member(archive, info, os.path.join(dest, *parts), budget, problems)


def _check_directory(raw, name, max_files):
    """Refuse a zip whose central directory announces more than `max_files` entries or more bytes
    than they need, before zipfile parses it (it would build one object per entry, all in memory).

    The end records are read by zipfile's own reader (``zipfile._EndRecData``): a zip may hold two
    zip64 records, one where its locator points and one where zipfile looks, and only the one zipfile
    uses decides what it will parse. Its size bounds the entries zipfile can find; their number is
    checked again after parsing (``_check_parsed``)."""
    try:
        end = zipfile._EndRecData(raw)
    except (OSError, zipfile.BadZipFile, struct.error):
        end = None
    raw.seek(0)
    if not end:
        return  # not a zip: zipfile says so
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    if entries > max_files:
        raise ExtractionStopped(f"{name} holds {entries} entries, more than {max_files}: "
                                "nothing was extracted (zip only your files)")
    if size > max_files * ZIP_DIRECTORY_BYTES_PER_ENTRY:
        raise ExtractionStopped(f"{name}'s list of entries takes {human_size(size)}, more than "
                                f"{max_files} entries need: nothing was extracted")
    return entries


def _check_parsed(archive, name, announced):
    """zipfile finds its entries by walking the directory's bytes, not by its count: a zip that
    announces fewer entries than it holds is lying about something, and is refused whole."""
    found = len(archive.infolist())
    if announced is not None and found != announced:
        raise ExtractionStopped(f"{name} announces {announced} entries but holds {found}: "
                                "nothing was extracted (zip it again)")


def _safe_parts(filename):
    """The path components of a zip entry (Windows backslashes count as separators)."""
    return [p for p in filename.replace("\\", "/").split("/") if p not in ("", ".")]


def _refusal(info, parts):
    shown = info.filename
    normalized = info.filename.replace("\\", "/")
    if normalized.startswith("/") or re.match(r"[A-Za-z]:", normalized):  # /x or C:\x
        return f"zip entry {shown} has an absolute path: refused"
    if ".." in parts:
        return f"zip entry {shown} points outside the submission: refused"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"zip entry {shown} is a symlink: ignored"
    if not parts:
        return f"zip entry {shown!r} has no name: ignored"
    return None


class _Budget:
    """What is left of the caps of one extraction."""

    def __init__(self, max_bytes, max_files, max_file_bytes=None):
        self.bytes_left, self.entries_left = max_bytes, max_files
        self.max_bytes, self.max_files, self.max_file_bytes = max_bytes, max_files, max_file_bytes

    def take_entry(self):
        if self.entries_left == 0:
            raise ExtractionStopped(f"the zip holds more than {self.max_files} entries: "
                                    "the rest were not extracted")
        self.entries_left -= 1


def _extract_folder(info, target, problems):
    try:
        os.makedirs(target, mode=0o700, exist_ok=True)
    except (OSError, ValueError):
        problems.append(f"zip entry {info.filename} could not be extracted: ignored")


def _extract_member(archive, info, target, budget, problems):
    try:
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except (OSError, ValueError):  # a duplicate entry, a file where a folder should be, ...
        problems.append(f"zip entry {info.filename} could not be extracted: ignored")
        return
    try:
        with os.fdopen(fd, "wb") as out, archive.open(info) as member:
            file_left = float("inf") if budget.max_file_bytes is None else budget.max_file_bytes + 1
            while file_left and (chunk := member.read(int(min(_CHUNK, budget.bytes_left + 1, file_left)))):
                if len(chunk) > budget.bytes_left:
                    raise ExtractionStopped(f"the zip expands to more than "
                                            f"{human_size(budget.max_bytes)}: extraction stopped")
                budget.bytes_left -= len(chunk)
                file_left -= len(chunk)  # at 0, one byte past the per-file cap: no more is decompressed
                out.write(chunk)
    except ExtractionStopped:
        os.unlink(target)  # a truncated file must never pass for the real one
        raise
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as e:
        os.unlink(target)
        reason = "encrypted" if "encrypted" in str(e) else "damaged or unsupported"
        problems.append(f"zip entry {info.filename} is {reason}: ignored")

