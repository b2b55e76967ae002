"""vlmrl view in a real browser (Debian's chromium through Selenium and chromedriver, both from `make setup`):
frames render, the scrubber and keys move them, labels made on the page survive a reload and are what
`vlmrl scorer fit --labels` trains on; damage is shown on the page.

    VLMRL_VIEWER_SCREENSHOT=docs/img/viewer.png pytest tests/vlmrl/test_view_browser.py   # the README's picture
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from buffer.storage.zarr_store import ZarrStorage
from tests.vlmrl.view_store import CLIP_LENGTH, CLIP_STRIDE, make_view_store
from vlmrl import cli
from vlmrl.pipelines import view
from vlmrl.view.server import Server

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        pytest.fail(
            f"{CHROMIUM} and {CHROMEDRIVER} are needed: `make setup` installs Debian's chromium, chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="vlmrl-view-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",  # without these the closed network refuses its connections
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1400,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver, script: str, timeout_s: float = 15.0):
    """Poll a JS expression until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return ({script});")
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {script}")


def press(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def camera_pixels(driver, camera: str) -> np.ndarray:
    """What the page shows of a camera: a screenshot of its canvas, as RGB."""
    from selenium.webdriver.common.by import By

    canvas = driver.find_element(By.CSS_SELECTOR, f'#cameras canvas[data-camera="{camera}"]')
    shot = cv2.imdecode(np.frombuffer(canvas.screenshot_as_png, np.uint8), cv2.IMREAD_COLOR)
    return shot[..., ::-1]


def stored_frame(store: Path, camera: str, episode: int, step: int) -> np.ndarray:
    meta = json.loads((store / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]
    from buffer.spec import ArraySpec

    specs = {n: ArraySpec(n, tuple(s), np.dtype(d)) for n, (s, d) in meta["specs"].items()}
    storage = ZarrStorage.open_or_create(str(store), specs, capacity=meta["capacity"])
    try:
        start, _ = storage.episodes().bounds(episode)
        return storage.read(f"pixels/{camera}", np.array([start + step]))[0]
    finally:
        storage.close()


def shows(pixels: np.ndarray, frame: np.ndarray) -> float:
    """Mean absolute difference between the page's pixels and a stored frame scaled to them."""
    scaled = cv2.resize(frame, (pixels.shape[1], pixels.shape[0]), interpolation=cv2.INTER_NEAREST)
    return float(np.abs(pixels.astype(int) - scaled.astype(int)).mean())


def frame_drawn(driver, camera: str, step: int) -> None:
    wait_for(driver, f"document.querySelector('#readout').textContent.startsWith('step {step} /')")
    wait_for(
        driver,
        f"(() => {{ const c = document.querySelector('#cameras canvas[data-camera=\"{camera}\"]');"
        "const d = c.getContext('2d').getImageData(c.width / 2, c.height / 2, 1, 1).data; return d[3] > 0; })()",
    )
    time.sleep(0.1)


def test_frames_scrub_labels_reload_and_fit(browser, tmp_path):
    # No success info: the scorer below can only have learned from the labels made on the page.
    store = make_view_store(tmp_path / "rec" / "episodes.zarr", info=("progress",))
    app, source = view.open_viewer(
        view.Config(path=store, clip_length=CLIP_LENGTH, clip_stride=CLIP_STRIDE, annotator="tester")
    )
    with Server(app) as server:
        browser.get(server.url)
        wait_for(browser, "document.body.dataset.ready === '1'")
        assert browser.find_element("id", "episode-title").text == "episode 0"
        frame_drawn(browser, "front", 0)
        for camera in ("front", "wrist"):
            pixels = camera_pixels(browser, camera)
            assert pixels.std() > 10, f"{camera}: the frame is blank"
            assert shows(pixels, stored_frame(store, camera, 0, 0)) < 8

        press(browser, *["\ue014"] * 5)  # arrow right: step 5
        frame_drawn(browser, "front", 5)
        at_5 = camera_pixels(browser, "front")
        assert shows(at_5, stored_frame(store, "front", 0, 5)) < 8
        assert (
            shows(at_5, stored_frame(store, "front", 0, 0))
            > shows(at_5, stored_frame(store, "front", 0, 5)) + 2
        )
        browser.execute_script(
            "const s = document.querySelector('#scrubber'); s.value = 12; s.dispatchEvent(new Event('input'));"
        )
        frame_drawn(browser, "wrist", 12)
        assert shows(camera_pixels(browser, "wrist"), stored_frame(store, "wrist", 0, 12)) < 8
        assert "clip 8..16" in browser.find_element("id", "readout").text  # the clip under the cursor

        press(browser, "s")  # episode 0: success
        wait_for(browser, "document.querySelector('#saved').textContent.includes('saved success (episode)')")
        press(browser, "j")  # next episode, labelled failure
        wait_for(browser, "document.querySelector('#episode-title').textContent === 'episode 1'")
        press(browser, "f")
        wait_for(browser, "document.querySelector('#saved').textContent.includes('saved failure (episode)')")
        press(browser, "j")  # episode 2: steps 6..10 succeed
        wait_for(browser, "document.querySelector('#episode-title').textContent === 'episode 2'")
        press(browser, "\ue011", *["\ue014"] * 6, "[", *["\ue014"] * 4, "]", "S")
        wait_for(browser, "document.querySelector('#saved').textContent.includes('steps 6..11')")

        browser.refresh()
        wait_for(browser, "document.body.dataset.ready === '1'")
        cells = browser.execute_script(
            "return [...document.querySelectorAll('#episodes tbody tr')].map(r => r.children[3].textContent.trim())"
        )
        assert cells == ["success", "failure", "+1", ""]
        if os.environ.get("VLMRL_VIEWER_SCREENSHOT"):
            take_readme_screenshot(browser, Path(os.environ["VLMRL_VIEWER_SCREENSHOT"]))
    source.close()

    labels = Path(f"{store}.labels.json")
    records = json.loads(labels.read_text())["labels"]
    assert {(r["episode"], r["start"], r["label"], r["annotator"]) for r in records} == {
        (0, None, "success", "tester"),
        (1, None, "failure", "tester"),
        (2, 6, "success", "tester"),
    }
    out = tmp_path / "student.pt"
    args = ["scorer", "fit", str(store), "--labels", str(labels), "--out", str(out), "--clip-length", "4"]
    args += ["--clip-stride", "2", "--epochs", "2", "--width", "4", "--no-progress"]
    assert cli.main(args) == 0
    summary = json.loads((tmp_path / "student-fit" / "summary.json").read_text())
    # Episode 0: 16 windows and 16 rewound ones; 1: 16; 2: the 5 windows ending in steps 6..10, 5 rewound;
    # episode 3, which nobody labelled, none.
    assert summary["train_windows"] + summary["heldout"]["windows"] == 32 + 16 + 10
    assert summary["labels"] == f"file {labels}"


def test_keys_pressed_while_an_episode_loads_never_label_the_one_being_left(browser, tmp_path):
    """ "j" then "s" at once: the success key must not land on episode 0 while episode 1's series is on its way
    (the title said "episode 1" before the page had left episode 0, and a fast annotator's label went there)."""
    store = make_view_store(tmp_path / "rec" / "episodes.zarr")
    app, source = view.open_viewer(view.Config(path=store, clip_length=CLIP_LENGTH, clip_stride=CLIP_STRIDE))
    series = source.series

    def slow_series(episode: int):
        if episode == 1:
            time.sleep(1.5)
        return series(episode)

    source.series = slow_series
    with Server(app) as server:
        browser.get(server.url)
        wait_for(browser, "document.body.dataset.ready === '1'")
        press(browser, "j", "s")  # next episode, and success while it loads
        assert "loading" in browser.find_element("id", "episode-title").text
        wait_for(browser, "document.querySelector('#episode-title').textContent === 'episode 1'")
        press(browser, "f")  # loaded: the keys act on episode 1
        wait_for(browser, "document.querySelector('#saved').textContent.includes('saved failure (episode)')")
        cells = browser.execute_script(
            "return [...document.querySelectorAll('#episodes tbody tr')].map(r => r.children[3].textContent.trim())"
        )
        assert cells[:2] == ["", "failure"]
    source.close()


def take_readme_screenshot(driver, path: Path) -> None:
    """The README's picture: episode 0 mid-way, both scorers, a range label in view."""
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(1400, 1000)
    # The README's command names runs/rec/episodes.zarr; this store lives in a temporary folder.
    driver.execute_script(
        "const s = document.querySelector('#store'); s.textContent = s.textContent.replace(/^.*\\/rec\\//, 'runs/rec/')"
    )
    driver.execute_script("document.querySelector('#episodes tbody tr[data-id=\"2\"]').click()")
    wait_for(driver, "document.querySelector('#episode-title').textContent === 'episode 2'")
    driver.execute_script(
        "const s = document.querySelector('#scrubber'); s.value = 9; s.dispatchEvent(new Event('input'));"
    )
    frame_drawn(driver, "front", 9)
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 900)


def test_the_page_says_which_episodes_are_damaged(browser, tmp_path):
    store = make_view_store(tmp_path / "episodes.zarr", frames_per_shard=16)
    (store / "pixels" / "wrist" / "c" / "1" / "0" / "0" / "0").write_bytes(b"garbage")  # episodes 0 and 1
    app, source = view.open_viewer(view.Config(path=store, clip_length=CLIP_LENGTH, clip_stride=CLIP_STRIDE))
    with Server(app) as server:
        browser.get(server.url)
        wait_for(browser, "document.body.dataset.ready === '1'")
        assert "2 damaged episode(s)" in browser.find_element("id", "banner").text
        assert browser.execute_script("return document.querySelectorAll('#episodes tr.damaged').length") == 2
        assert browser.find_element("id", "episode-title").text == "episode 2"  # the first intact one
        browser.execute_script("document.querySelector('#episodes tbody tr[data-id=\"1\"]').click()")
        text = wait_for(browser, "document.querySelector('#episode-banner').textContent")
        assert text.startswith("episode 1 is damaged:") and "wrist" in text
        frame_drawn(browser, "front", 0)
        assert camera_pixels(browser, "front").std() > 10  # the intact camera still shows
    source.close()
