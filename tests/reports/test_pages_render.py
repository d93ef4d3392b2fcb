"""The HTML reports as a person sees them: rendered by headless Chromium from disk, to PNG."""
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageStat

from conftest import ROOT, run_grader

pytestmark = pytest.mark.slow  # renders the report pages in chromium (`make check-fast` skips it)

SAMPLES = ROOT / "examples" / "submissions"
WINDOW = (1200, 1600)
VIRIDIS_YELLOW = (253, 231, 37)  # the top of the heatmaps' colour scale: every mask picture has it
HISTOGRAM_BLUE = (76, 114, 176)  # the bars of the score histogram


@pytest.fixture(scope="module")
def chromium():
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    pytest.skip("Chromium is not installed; install the Debian package `chromium` (apt-get install chromium) "
                "to render the HTML reports in this test")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """A buggy submission (with named bugs and heatmaps) and the reference, graded once."""
    out = tmp_path_factory.mktemp("reports")
    run = run_grader("grade", SAMPLES / "mask_bug", SAMPLES / "reference", "--out", out, "--jobs", 2)
    assert run.returncode == 0, f"grader failed:\n{run.stderr[-3000:]}"
    return out


def screenshot(chromium, page, tmp_path):
    """``page`` rendered by headless Chromium in a fresh profile, as an RGB image."""
    shot = tmp_path / f"{page.stem}.png"
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={profile}", f"--screenshot={shot}",
                          f"--window-size={WINDOW[0]},{WINDOW[1]}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.is_file(), f"chromium did not write a screenshot:\n{run.stderr[-2000:]}"
    image = Image.open(shot)
    assert image.format == "PNG"
    return image.convert("RGB")


def pixels_near(image, colour, tolerance=12):
    distance = np.abs(np.asarray(image, dtype=int) - np.array(colour)).max(axis=2)
    return int((distance <= tolerance).sum())


def assert_not_blank(image):
    assert image.size == WINDOW, f"screenshot is {image.size}, the window is {WINDOW}"
    assert ImageStat.Stat(image.convert("L")).var[0] > 200, "the rendered page is (nearly) blank"


def test_summary_html_renders_with_its_score_histogram(chromium, reports, tmp_path):
    image = screenshot(chromium, reports / "summary.html", tmp_path)
    assert_not_blank(image)
    assert pixels_near(image, HISTOGRAM_BLUE) > 1000, "the score histogram does not show"


def test_feedback_html_renders_with_its_heatmaps(chromium, reports, tmp_path):
    image = screenshot(chromium, reports / "mask_bug" / "feedback.html", tmp_path)
    assert_not_blank(image)
    assert pixels_near(image, VIRIDIS_YELLOW) > 2000, "the heatmaps do not show"


def test_a_passing_report_renders_without_heatmaps(chromium, reports, tmp_path):
    image = screenshot(chromium, reports / "reference" / "feedback.html", tmp_path)
    assert_not_blank(image)
    assert pixels_near(image, VIRIDIS_YELLOW) < 50, "the check for heatmaps cannot tell a page without them"
