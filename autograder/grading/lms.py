"""Canvas's and Moodle's "download all submissions" layouts, recognised from their documented naming.

- Canvas puts every file of the class in one folder, named ``<lastfirst>_<userid>_<submissionid>_<file>``
  (``<lastfirst>_LATE_<userid>_...`` when late). A re-uploaded file keeps a ``-N`` suffix
  (``attention-1.py``). The user id is Canvas's own ``ID``, which its gradebook import matches first.
- Moodle names each student's folder (or, without folders, each file's prefix)
  ``<Full Name>_<participantid>_assignsubmission_file_``; its grading worksheet matches a row by
  ``Participant <participantid>``.

A flat download is regrouped here into one folder per student (files copied, each read with a
bound by staging's own reader, never a symlink), so that staging reads it as any other upload.
"""
import os
import re
from dataclasses import dataclass

from autograder.grading import stage

CANVAS, MOODLE = "canvas", "moodle"
CANVAS_NAME = re.compile(r"^(?P<name>[^_]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>.+)$")
MOODLE_NAME = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
CANVAS_RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.(?:py|zip|ipynb))$", re.IGNORECASE)
COPY_MAX_BYTES = 16 * 1024 * 1024 + 1  # one past staging's zip cap: a larger file is refused there, with its line


@dataclass(frozen=True)
class Identity:
    lms: str      # CANVAS or MOODLE
    user: str     # Canvas's user id, or Moodle's participant id
    name: str     # as the LMS spells it: Canvas's "lastfirst", Moodle's full name
    late: bool = False
    file: str = ""  # the file's own name once the LMS prefix is removed
    file_id: str = ""  # Canvas: the submitted file's attachment id, which its Re-Upload Submissions matches


def moodle_folder(name):
    """The Identity of a Moodle per-student folder name, or None."""
    match = MOODLE_NAME.match(name)
    if not match or match["plugin"] != "file":
        return None
    return Identity(MOODLE, match["user"], match["name"])


def flat_file(name):
    """The Identity of a file of a flat Canvas or Moodle download, with its own name, or None."""
    match = MOODLE_NAME.match(name)
    if match and match["file"]:
        return Identity(MOODLE, match["user"], match["name"], file=match["file"])
    match = CANVAS_NAME.match(name)
    if match:
        own = CANVAS_RESUBMITTED.sub(r"\g<stem>\g<ext>", match["file"])
        return Identity(CANVAS, match["user"], match["name"], bool(match["late"]), own, match["sub"])
    return None


def flat_groups(files):
    """{(lms, user): [(Identity, path)]} for the files of `files` ((name, path) pairs) named the way one LMS
    names a flat download's files (others, such as a notes file of the instructor's, are left out), or None
    when none is, or when both LMS namings occur."""
    groups = {}
    for name, path in files:
        who = flat_file(name)
        if who is not None:
            groups.setdefault((who.lms, who.user), []).append((who, path))
    if len({lms for lms, _ in groups}) != 1:
        return None
    return groups


def _newest_first(member):
    """Sort key: the latest upload of a name first (a larger Canvas attachment id, then a larger ``-N``)."""
    who, path = member
    again = CANVAS_RESUBMITTED.match(os.path.basename(path))
    return (-int(who.file_id) if who.file_id.isdigit() else 0,
            -int(again[0][len(again["stem"]) + 1:-len(again["ext"])]) if again else 0)


def regroup(members, dest):
    """Copy one student's files (Identity, path) into the new folder `dest` under their own names; of two
    files of one name (a file uploaded again: Canvas names it ``mha-1.py``), the latest is kept."""
    os.mkdir(dest, 0o700)
    for who, path in sorted(members, key=_newest_first):
        own = os.path.basename(who.file.replace("\\", "/")) or "file"
        if own.startswith("."):
            continue
        data = stage.read_regular(path, COPY_MAX_BYTES)
        target = os.path.join(dest, own)
        if data is not None and not os.path.exists(target):  # two files of one name: the first is kept
            with open(target, "xb") as f:
                f.write(data)
