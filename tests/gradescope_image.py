"""A clean Linux image in which the kit's Gradescope zip runs the way Gradescope runs it.

The image is a ``debootstrap --variant=minbase bookworm`` root file system: no Python, nothing
of this machine's venv or PATH. It is built once and cached outside the repository
(``~/.cache/attention-kit``). For each test session it is copied, the zip is unpacked into
``/autograder/source`` as Gradescope does, and ``setup.sh`` runs in it as root with a bare
environment. Each submission then gets its own fresh ``/autograder/submission`` and
``/autograder/reports/results`` and runs ``/autograder/run_autograder``:

* in a new PID and mount namespace (like a container: nothing it starts can outlive it
  unnoticed, and the harness sees what was still alive when run_autograder returned);
* chrooted into the image, with ``env -i`` and the standard PATH, cwd ``/autograder``;
* without CAP_SYS_ADMIN (as under Docker's default profile, so the grader's namespaces are
  refused and the ``uid`` level is what runs, as on Gradescope);
* inside a 768 MiB memory cgroup, whose peak is recorded; the cgroup hierarchy is visible
  read-only, as Docker shows it, so the grader can read its limit but make no cgroup of its own;
* on request (``cpu=0.5``), in a CPU quota: Gradescope's default is half a CPU.

Two things differ from Gradescope because of this machine, and only these: the image trusts
this machine's extra CA certificates (the package registries are reached through a proxy with
its own CA), and PyTorch's CPU index is stood in for by a local PEP 503 index holding the same
CPU wheel of torch 2.13.0 (``TORCH_INDEX``); the rest of the runtime comes from PyPI.

Run as a script, this module is the init process of the namespace (see ``Image.run``).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # also run as a script (the namespace's init)
from autograder.containment import cgroups  # noqa: E402
from bench.cpu_quota import CpuQuota  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-kit"
BASE = CACHE / "bookworm-minbase"
MIRROR = "http://deb.debian.org/debian"
BARE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GRADESCOPE_MEMORY = 768 << 20
LATE_STRIKE_WAIT = 2  # seconds after run_autograder returns in which results.json must not change
TORCH_WHEEL_INDEX = "/opt/torch-cpu-index/simple"


def unavailable():
    """Why the image cannot be used on this machine, or None."""
    if os.getuid() != 0:
        return "needs root (chroot, namespaces, a memory cgroup)"
    for tool in ("unshare", "capsh", "mount"):
        if not shutil.which(tool):
            return f"needs {tool} (Debian: util-linux / libcap2-bin)"
    if not BASE.is_dir() and not shutil.which("debootstrap"):
        return "needs debootstrap (Debian package debootstrap) to build the clean image"
    if cgroups.parent_folders()[0] is None:
        return "needs a writable memory cgroup (v1 memory controller or cgroup v2 with memory)"
    return None


def base_image():
    """The cached minimal bookworm root file system, built on first use (about a minute)."""
    if BASE.is_dir():
        try:
            check_image_modes(BASE)
            return BASE
        except RuntimeError as wrong:  # built by an older harness (a 0700 root): build it again
            print(f"rebuilding the cached image: {wrong}", file=sys.stderr)
            shutil.rmtree(BASE)
    CACHE.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="bookworm-minbase.", dir=CACHE))
    run = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(building), MIRROR],
                         capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise RuntimeError(f"debootstrap failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    # mkdtemp made the folder 0700, and it becomes the image's /: a real image's / is 0755, and with
    # 0700 nothing in the image is reachable by the sandbox's uid.
    building.chmod(0o755)
    building.rename(BASE)  # atomic: a half-built image is never taken for the cache
    return BASE


# The modes a Debian or Ubuntu root file system (debootstrap's, Gradescope's image) has, for the
# folders the grader's uid must reach or write: an image that differs would skew every result.
REAL_IMAGE_MODES = {"": 0o755, "usr": 0o755, "usr/bin": 0o755, "usr/lib": 0o755, "etc": 0o755,
                    "opt": 0o755, "tmp": 0o1777, "var/tmp": 0o1777}


def check_image_modes(root, made=()):
    """Raise if ``root`` (an image) or a folder the harness ``made`` in it has other modes than a real image.

    ``made`` are folders relative to ``root`` that the harness created (the zip's, the torch index): they
    must be 0755, as ``mkdir`` under the usual umask and ``unzip`` leave them, whatever this process's
    umask is."""
    root = Path(root)
    wrong = []
    expected = {**REAL_IMAGE_MODES, **{str(m): 0o755 for m in made}}
    for relative, mode in sorted(expected.items()):
        path = root / relative
        actual = path.stat().st_mode & 0o7777 if path.is_dir() else None
        if actual != mode:
            wrong.append(f"/{relative} is {oct(actual) if actual is not None else 'missing'}, not {oct(mode)}")
    if wrong:
        raise RuntimeError("the clean image differs from a real one: " + "; ".join(wrong))


def torch_cpu_wheel(download_dir):
    """The CPU wheel of torch 2.13.0 for CPython 3.11, as ``pip download`` finds it from this machine."""
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                          "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
                          "torch==2.13.0", "-d", str(download_dir)], capture_output=True, text=True, timeout=900)
    wheels = sorted(Path(download_dir).glob("torch-2.13.0*cpu*.whl"))
    if run.returncode != 0 or not wheels:
        raise RuntimeError(f"could not get torch's CPU wheel:\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}")
    return wheels[0]


@dataclass
class Outcome:
    returncode: int
    output: str
    peak_bytes: int  # the memory cgroup's peak (0 without a limit)
    oom_kills: int  # processes the cgroup's OOM killer ended
    survivors: list  # [pid, name, uid] alive in the namespace when the command returned
    late_change: bool  # results.json changed after the command returned
    seconds: float = 0.0  # the command's wall time (the namespace's own start and end not counted)


class Image:
    """A copy of the clean image with the autograder zip unpacked as Gradescope does."""

    def __init__(self, root):
        self.root = Path(root)

    @classmethod
    def create(cls, workdir, autograder_zip, torch_wheel):
        root = Path(workdir) / "image"
        subprocess.run(["cp", "-a", "--reflink=auto", str(base_image()), str(root)], check=True)
        image = cls(root)
        made = image._trust_this_machines_proxy()
        index = root / TORCH_WHEEL_INDEX.lstrip("/") / "torch"
        made += _make_folders(root, index.relative_to(root))
        shutil.copy(torch_wheel, index / torch_wheel.name)
        (index / "index.html").write_text(f'<a href="{torch_wheel.name}">{torch_wheel.name}</a>\n')
        source = root / "autograder" / "source"
        made += _make_folders(root, source.relative_to(root))
        with zipfile.ZipFile(autograder_zip) as archive:
            for info in archive.infolist():
                folder = (source / info.filename).relative_to(root)
                made += _make_folders(root, folder if info.is_dir() else folder.parent)
                archive.extract(info, source)
                mode = info.external_attr >> 16
                if mode:
                    (source / info.filename).chmod(mode & 0o777)
        shutil.copy(source / "run_autograder", root / "autograder" / "run_autograder")
        check_image_modes(root, made)
        return image

    def _trust_this_machines_proxy(self):
        """The registries are reached through a proxy with its own CA: the image must trust it (see module doc)."""
        cas = self.root / "usr/local/share/ca-certificates"
        made = _make_folders(self.root, cas.relative_to(self.root))
        for cert in Path("/usr/local/share/ca-certificates").glob("*.crt"):
            shutil.copy(cert, cas / cert.name)
        # pip's own bundle (certifi) does not hold that CA; the system bundle does once
        # ca-certificates (installed by setup.sh) has run update-ca-certificates.
        (self.root / "etc/pip.conf").write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
        shutil.copy("/etc/resolv.conf", self.root / "etc/resolv.conf")
        return made

    # --- running things in it --------------------------------------------------------------

    def setup(self, timeout=1800):
        """Run setup.sh as Gradescope builds the image: as root, from /autograder/source, bare environment."""
        return self.run(["bash", "./setup.sh"], cwd="/autograder/source", timeout=timeout,
                        env={"TORCH_INDEX": f"file://{TORCH_WHEEL_INDEX}"})

    def grade(self, files=None, metadata=None, timeout=600, memory=GRADESCOPE_MEMORY, cpu=None):
        """A fresh submission folder with ``files`` (name -> bytes or str), then run_autograder as Gradescope
        runs it. Returns (results dict or None, Outcome)."""
        autograder = self.root / "autograder"
        for name in ("submission", "results"):
            shutil.rmtree(autograder / name, ignore_errors=True)
        (autograder / "submission").mkdir()
        for name, data in (files or {}).items():
            path = autograder / "submission" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.encode() if isinstance(data, str) else data)
        (autograder / "submission_metadata.json").write_text(json.dumps(metadata or {}))
        self._clean_tmp()
        outcome = self.run(["/autograder/run_autograder"], cwd="/autograder", drop_sys_admin=True,
                           memory=memory, timeout=timeout, watch="/autograder/reports/results/results.json", cpu=cpu)
        path = autograder / "results" / "results.json"
        try:
            results = json.loads(path.read_text())
        except (OSError, ValueError):
            results = None
        return results, outcome

    def _clean_tmp(self):
        """Each Gradescope submission starts from the image: nothing a previous case left in /tmp."""
        tmp = self.root / "tmp"
        for entry in tmp.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def run(self, argv, cwd="/", env=None, drop_sys_admin=False, memory=None, timeout=600, watch=None, cpu=None):
        """Run ``argv`` in the image in a new PID and mount namespace; see the module doc. ``cpu``: a CPU
        quota (a fraction of one CPU), or None; where none can be made, the test skips with the reason."""
        quota = None
        if cpu:
            quota, why = CpuQuota.create(cpu)
            if quota is None:
                import pytest

                pytest.skip(f"no CPU quota: {why}")
        # A container's limit is on memory alone: the process count is left as good as unlimited.
        cgroup = cgroups.create(memory, 1 << 20, prefix="attention-kit-gradescope-") if memory else None
        procs = (cgroup.procs if cgroup else []) + ([str(quota.folder / "cgroup.procs")] if quota else [])
        spec = {"root": str(self.root), "argv": argv, "cwd": cwd, "env": env or {}, "drop_sys_admin": drop_sys_admin,
                "cgroup_procs": procs, "timeout": timeout, "watch": watch}
        with tempfile.NamedTemporaryFile("w+", suffix=".json") as report:
            spec["report"] = report.name
            try:
                run = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--uts", "--ipc",
                                      "--propagation", "private", sys.executable, __file__, json.dumps(spec)],
                                     capture_output=True, text=True, timeout=timeout + 60)
                data = json.loads(Path(report.name).read_text() or "{}")
            finally:
                peak, kills = (cgroup.peak_memory() or 0, oom_kills(cgroup)) if cgroup else (0, 0)
                if cgroup:
                    cgroup.remove()
                if quota:
                    quota.remove()
        return Outcome(data.get("returncode", run.returncode), data.get("output", run.stdout + run.stderr),
                       peak, kills, data.get("survivors", []), data.get("late_change", False), data.get("seconds", 0.0))


def _make_folders(root, relative):
    """Create ``root/relative`` and its missing parents at 0755 (not under this process's umask); returns
    the folders it created, relative to ``root``."""
    made = []
    for part in reversed([Path(relative), *Path(relative).parents][:-1]):
        path = Path(root) / part
        if not path.exists():
            path.mkdir()
            path.chmod(0o755)
            made.append(part)
    return made


# --- the container's memory cgroup: autograder.containment.cgroups, plus the OOM-kill count ---------------

def oom_kills(cgroup):
    """Processes the cgroup's OOM killer ended."""
    folder = cgroup.folders["memory"]
    name = "memory.oom_control" if cgroup.version == 1 else "memory.events"
    try:
        lines = (folder / name).read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith("oom_kill ")), 0)


# --- the init process inside the namespace ---------------------------------------------------

def _digest(path):
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _processes():
    """[pid, name, uid] of every live process of this PID namespace but this one."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            name = (entry / "comm").read_text().strip()
            uid = entry.stat().st_uid
        except OSError:
            continue
        if state != "Z":
            found.append([int(entry.name), name, uid])
    return found


def _init(spec):
    root = spec["root"]
    for folder in ("proc", "dev"):
        os.makedirs(f"{root}/{folder}", exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", f"{root}/proc"], check=True)
    subprocess.run(["mount", "--rbind", "/dev", f"{root}/dev"], check=True)
    _mount_cgroups_read_only(root)
    env = {"PATH": BARE_PATH, "HOME": "/root", **spec["env"]}
    inner = "cd " + _quote(spec["cwd"]) + " && exec env -i " + " ".join(
        _quote(f"{k}={v}") for k, v in env.items()) + " " + " ".join(_quote(a) for a in spec["argv"])
    if spec["drop_sys_admin"]:
        # capsh chroots, then drops CAP_SYS_ADMIN from the bounding set: after the exec of bash the
        # command runs as root without it, as in a Docker container with the default profile.
        command = ["capsh", f"--chroot={root}", "--drop=cap_sys_admin", "--", "-c", inner]
    else:
        command = ["chroot", root, "/bin/bash", "-c", inner]
    def join_cgroup():
        cgroups.join(spec["cgroup_procs"])

    with tempfile.TemporaryFile("w+") as output:
        started = time.monotonic()
        try:
            returncode = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, preexec_fn=join_cgroup,
                                        timeout=spec["timeout"], stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            returncode = -9
        seconds = time.monotonic() - started
        survivors = _processes()
        watch = spec["watch"] and root + spec["watch"]
        before = _digest(watch) if watch else None
        if watch:
            time.sleep(LATE_STRIKE_WAIT)
        late = bool(watch) and _digest(watch) != before
        output.seek(0)
        text = output.read()[-200_000:]
    Path(spec["report"]).write_text(json.dumps({"returncode": returncode, "output": text, "survivors": survivors,
                                                "late_change": late, "seconds": seconds}))
    # Leaving kills whatever is left: this process is PID 1 of the namespace.


def _mount_cgroups_read_only(root):
    """Docker shows a container its cgroups read-only: the grader can read its memory limit there but
    cannot make cgroups of its own. Mounted as fresh read-only instances of this machine's hierarchies."""
    base = f"{root}/sys/fs/cgroup"
    os.makedirs(base, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "cgroup-root", base], check=True)
    for line in Path("/proc/self/mounts").read_text().splitlines():
        source, target, kind, options = line.split()[:4]
        if kind == "cgroup" and target.startswith("/sys/fs/cgroup/"):
            controllers = [o for o in options.split(",") if o in ("memory", "pids")]
            if controllers:
                os.makedirs(f"{base}/{target.rsplit('/', 1)[1]}", exist_ok=True)
                subprocess.run(["mount", "-t", "cgroup", "-o", ",".join(["ro", *controllers]), source,
                                f"{base}/{target.rsplit('/', 1)[1]}"], check=True)
    subprocess.run(["mount", "-o", "remount,ro", base], check=True)


def _quote(text):
    return "'" + str(text).replace("'", "'\"'\"'") + "'"


if __name__ == "__main__":
    _init(json.loads(sys.argv[1]))
