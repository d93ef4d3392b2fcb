"""The clean-image harness builds the image users have: its folders' modes are a real image's."""
import os

import pytest

import gradescope_image
from gradescope_image import REAL_IMAGE_MODES, _make_folders, check_image_modes


def a_real_looking_root(root):
    for relative, mode in REAL_IMAGE_MODES.items():
        (root / relative).mkdir(parents=True, exist_ok=True)
        (root / relative).chmod(mode)
    return root


def test_an_image_with_a_real_images_modes_passes(tmp_path):
    check_image_modes(a_real_looking_root(tmp_path / "image"))


def test_a_private_root_fails_loudly(tmp_path):
    root = a_real_looking_root(tmp_path / "image")
    root.chmod(0o700)
    with pytest.raises(RuntimeError, match=r"/ is 0o700, not 0o755"):
        check_image_modes(root)


def test_a_tmp_without_the_sticky_bit_fails(tmp_path):
    root = a_real_looking_root(tmp_path / "image")
    (root / "tmp").chmod(0o777)
    with pytest.raises(RuntimeError, match=r"/tmp is 0o777, not 0o1777"):
        check_image_modes(root)


def test_folders_the_harness_makes_are_0755_whatever_the_umask(tmp_path):
    root = a_real_looking_root(tmp_path / "image")
    old = os.umask(0o077)
    try:
        made = _make_folders(root, "autograder/source/tests")
    finally:
        os.umask(old)
    assert [str(m) for m in made] == ["autograder", "autograder/source", "autograder/source/tests"]
    check_image_modes(root, made)


def test_a_made_folder_with_another_mode_fails(tmp_path):
    root = a_real_looking_root(tmp_path / "image")
    made = _make_folders(root, "autograder/source")
    (root / "autograder/source").chmod(0o700)
    with pytest.raises(RuntimeError, match="/autograder/source is 0o700"):
        check_image_modes(root, made)


def test_a_cached_base_with_a_private_root_is_rebuilt(tmp_path, monkeypatch):
    stale = a_real_looking_root(tmp_path / "bookworm-minbase")
    stale.chmod(0o700)
    monkeypatch.setattr(gradescope_image, "BASE", stale)
    monkeypatch.setattr(gradescope_image, "CACHE", tmp_path)

    def debootstrap(argv, **kwargs):
        target = a_real_looking_root(tmp_path / argv[3].split("/")[-1])
        target.chmod(0o700)  # debootstrap fills the folder it is given and leaves its mode as mkdtemp made it
        return type("Run", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setattr(gradescope_image.subprocess, "run", debootstrap)
    base = gradescope_image.base_image()
    assert base == stale and base.stat().st_mode & 0o7777 == 0o755
