"""Canvas's and Moodle's "download all submissions" layouts, read by each LMS's own naming grammar.

- Canvas (``lib/content_zipper.rb``, ``get_filename`` and ``add_upload_submission``) names each uploaded file
  ``<lastfirst>[_LATE]_<userid>_<attachmentid>_<the file's own name>``; a text entry is
  ``<lastfirst>[_LATE]_<userid>_text.html`` and a URL ``..._link.html``. ``lastfirst`` is the sortable name,
  lowercased, each ``_<digits>_`` run written ``<digits>`` and non-word characters dropped, so that its
  re-upload reader (``infer_comment_context_from_filename`` in ``app/models/assignment.rb``: split on ``_``,
  the first two all-digit parts are the user id and the attachment id) finds the ids in the prefix. The same
  rule is read here: whatever a student named the file comes after both ids and never changes how the class
  is read. A re-uploaded file keeps a ``-N`` suffix (``attention-1.py``). The user id is Canvas's own ``ID``,
  which its gradebook import matches first.
- Moodle (``mod/assign/locallib.php``, ``download_submissions``) names each student's folder (or, without
  folders, each file's prefix) ``<Full Name>_<participantid>_assignsubmission_<plugin>_``, after replacing
  every ``_`` of the name by a space: the name holds no ``_``, so the prefix ends at the first one. The
  plugin is ``file`` for uploads and ``onlinetext`` for the online text, both the same participant's.
  Its grading worksheet matches a row by ``Participant <participantid>``.

The two grammars exclude each other (the part after Moodle's id is ``assignsubmission``, after Canvas's the
attachment id or ``text.html``), so a flat folder is read by the grammar most of its files fit, and a file
that fits neither is named, not guessed at. A flat download is regrouped here into one folder per student
(files copied, each read with a bound by staging's own reader, never a symlink), so that staging reads it as
any other upload.
"""
import os
import re
from dataclasses import dataclass

from autograder.grading import stage

CANVAS, MOODLE = "canvas", "moodle"
# Moodle's prefix: a name without "_", the participant id, then the plugin's own folder (its subtype and type).
MOODLE_NAME = re.compile(r"^(?P<name>[^_]+)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$", re.DOTALL)
CANVAS_ONLINE = ("text.html", "link.html")  # Canvas's text entry and URL: a user id and no attachment id
CANVAS_RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.(?:py|zip|ipynb))$", re.IGNORECASE)
COPY_MAX_BYTES = 16 * 1024 * 1024 + 1  # one past staging's zip cap: a larger file is refused there, with its line


@dataclass(frozen=True)
class Identity:
    lms: str      # CANVAS or MOODLE
    user: str     # Canvas's user id, or Moodle's participant id
    name: str     # as the LMS spells it: Canvas's "lastfirst", Moodle's full name
    late: bool = False
    file: str = ""  # the file's own name once the LMS prefix is removed ("" for an online text or URL)
    file_id: str = ""  # Canvas: the submitted file's attachment id, which its Re-Upload Submissions matches


GRAMMAR = {CANVAS: "as Canvas names a download's files, <lastfirst>[_LATE]_<userid>_<attachmentid>_<file>",
           MOODLE: "as Moodle names a download's files, <Full Name>_<participantid>_assignsubmission_<plugin>_<file>"}


@dataclass(frozen=True)
class FlatDownload:
    lms: str          # the grammar most of the files fit: CANVAS or MOODLE
    groups: dict      # {(lms, user): [(Identity, path)]}
    unplaced: tuple   # names of the files that fit no grammar, or the other LMS's: named, never graded


def moodle_name(name):
    """The Identity of a name that starts with Moodle's prefix (a folder's, or a flat download's file), or None.
    ``plugin`` tells an upload (``file``) from the online text (``onlinetext``): both are the participant's."""
    match = MOODLE_NAME.match(name)
    if not match:
        return None
    return Identity(MOODLE, match["user"], match["name"], file=match["file"])


def moodle_folder(name):
    """The Identity of a Moodle per-student folder name (any of its plugins' folders), or None."""
    who = moodle_name(name)
    return who if who is not None and who.file == "" else None


def canvas_name(name):
    """The Identity of a file of Canvas's download, read as Canvas's own re-upload reads it: split on "_", the
    first two all-digit parts are the user id and the attachment id; what comes before them is ``lastfirst``
    (then ``LATE``), what comes after is the file's own name. None when the name has no such prefix."""
    parts = name.split("_")
    user = next((i for i, part in enumerate(parts) if part.isascii() and part.isdigit()), None)
    if not user:  # no id, or nothing before it
        return None
    late = user >= 2 and parts[user - 1] == "LATE"
    who = "_".join(parts[:user - 1 if late else user])
    if len(parts) == user + 2 and parts[user + 1] in CANVAS_ONLINE:  # a text entry or URL: no attachment
        return Identity(CANVAS, parts[user], who, late, parts[user + 1])
    attachment = parts[user + 1] if len(parts) > user + 2 else ""
    own = "_".join(parts[user + 2:])
    if not (attachment.isascii() and attachment.isdigit()) or not own:
        return None
    own = CANVAS_RESUBMITTED.sub(r"\g<stem>\g<ext>", own)
    return Identity(CANVAS, parts[user], who, late, own, attachment)


def flat_file(name):
    """The Identity of a file of a flat Canvas or Moodle download, with its own name, or None."""
    who = moodle_name(name)
    if who is not None:
        return who if who.file else None
    return canvas_name(name)


def flat_groups(files):
    """The FlatDownload of `files` ((name, path) pairs) when at least one is named the way Canvas or Moodle names
    a flat download's files, else None. The folder is read by the grammar most of its files fit; a file that
    fits neither (a notes file of the instructor's, a stray copy) or the other one is listed in ``unplaced``."""
    read = [(name, path, flat_file(name)) for name, path in files]
    counts = {}
    for _, _, who in read:
        if who is not None:
            counts[who.lms] = counts.get(who.lms, 0) + 1
    if not counts:
        return None
    grammar = max(sorted(counts), key=counts.get)
    groups, unplaced = {}, []
    for name, path, who in read:
        if who is not None and who.lms == grammar:
            groups.setdefault((who.lms, who.user), []).append((who, path))
        else:
            unplaced.append(name)
    return FlatDownload(grammar, groups, tuple(unplaced))


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
