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
- Canvas, graded anonymously (``get_filename`` when ``anonymize_students?``): no ``lastfirst``, and
  ``anon_<anonymous id>`` in place of the user id: ``[LATE_]anon_<anonymous id>_<attachmentid>_<name>``. The
  anonymous id is 5 base58 characters (``lib/anonymity.rb``), and the re-upload reader takes the part after a
  leading ``anon`` as it (``abstract_assignment.rb``). No user id is in such a name: the submission is known by
  its anonymous id alone, which Canvas's gradebook import cannot match.
- Moodle (``mod/assign/locallib.php``, ``download_submissions``) names each student's folder (or, without
  folders, each file's prefix) ``<Full Name>_<participantid>_assignsubmission_<plugin>_``, after replacing
  every ``_`` of the name by a space: the name holds no ``_``, so the prefix ends at the first one. The
  plugin is ``file`` for uploads and ``onlinetext`` for the online text, both the same participant's.
  Its grading worksheet matches a row by ``Participant <participantid>``.

The two grammars exclude each other (the part after Moodle's id is ``assignsubmission``, after Canvas's the
attachment id or ``text.html``), so a flat folder is read by the grammar of the LMS the instructor named
(``--export``; discover.py only asks which grammar most files fit to refuse a PATH not named as a download),
and a file that fits neither is named, not guessed at. A flat download is regrouped here into one folder per student
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
CANVAS_ANONYMOUS_ID = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{5}$")  # base58, 5 long (canvas-lms lib/anonymity.rb)
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
    anonymous_id: str = ""  # Canvas, graded anonymously: the submission's anonymous id (``user`` is anon_<it>)


GRAMMAR = {CANVAS: "as Canvas names a download's files, <lastfirst>[_LATE]_<userid>_<attachmentid>_<file> or, "
                   "graded anonymously, [LATE_]anon_<anonymousid>_<attachmentid>_<file>",
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
    (then ``LATE``), what comes after is the file's own name. A name starting ``[LATE_]anon_`` is an anonymous
    submission's (``canvas_anonymous_name``). None when the name has no such prefix."""
    parts = name.split("_")
    if (parts[1:2] if parts[0] == "LATE" else parts[:1]) == ["anon"]:
        return canvas_anonymous_name(parts)
    user = next((i for i, part in enumerate(parts) if part.isascii() and part.isdigit()), None)
    if not user:  # no id, or nothing before it
        return None
    late = user >= 2 and parts[user - 1] == "LATE"
    who = "_".join(parts[:user - 1 if late else user])
    return _canvas_tail(parts, user, who, late, parts[user], "")


def canvas_anonymous_name(parts):
    """The Identity of an anonymous download's file (its name split on "_"): ``[LATE_]anon_<id>_`` then, as in a
    named one, the attachment id and the file's own name (or ``text.html``, ``link.html``). Its ``user`` is
    ``anon_<id>`` and its name is empty: Canvas wrote neither the student's name nor their user id."""
    late = parts[0] == "LATE"
    at = 2 if late else 1  # the anonymous id's part
    if len(parts) <= at + 1 or not CANVAS_ANONYMOUS_ID.match(parts[at]):
        return None
    return _canvas_tail(parts, at, "", late, f"anon_{parts[at]}", parts[at])


def _canvas_tail(parts, at, who, late, user, anonymous_id):
    """The Identity once the student's id is ``parts[at]``: an online entry, or an attachment id and a name."""
    if len(parts) == at + 2 and parts[at + 1] in CANVAS_ONLINE:  # a text entry or URL: no attachment
        return Identity(CANVAS, user, who, late, parts[at + 1], anonymous_id=anonymous_id)
    attachment = parts[at + 1] if len(parts) > at + 2 else ""
    own = "_".join(parts[at + 2:])
    if not (attachment.isascii() and attachment.isdigit()) or not own:
        return None
    own = CANVAS_RESUBMITTED.sub(r"\g<stem>\g<ext>", own)
    return Identity(CANVAS, user, who, late, own, attachment, anonymous_id)


def flat_file(name):
    """The Identity of a file of a flat Canvas or Moodle download, with its own name, or None."""
    who = moodle_name(name)
    if who is not None:
        return who if who.file else None
    return canvas_name(name)


def flat_groups(files, grammar=None):
    """The FlatDownload of `files` ((name, path) pairs) when at least one is named the way Canvas or Moodle names
    a flat download's files (with `grammar`, that LMS's way), else None. The folder is read by `grammar`, or by
    the grammar most of its files fit; a file that fits neither (a notes file of the instructor's, a stray copy)
    or the other one is listed in ``unplaced``."""
    read = [(name, path, flat_file(name)) for name, path in files]
    counts = {}
    for _, _, who in read:
        if who is not None:
            counts[who.lms] = counts.get(who.lms, 0) + 1
    if not (counts.get(grammar) if grammar else counts):
        return None
    grammar = grammar or max(sorted(counts), key=counts.get)
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
