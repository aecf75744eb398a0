"""The page in a real browser (Debian's Chromium driven by Playwright), as a person uses it.

Screenshots of each step go to tests/e2e/artifacts/ (ignored by git).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from ..conftest import PROMPTS_DIR

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM),
                                reason=f"Chromium not found at {CHROMIUM} (.ci/run installs Debian's chromium)")


@pytest.fixture(scope="module")
def app(app_server):
    return app_server


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            # A microphone that says the real male prompt, allowed without asking.
            "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-audio-capture={PROMPTS_DIR / 'xtts_male.wav'}"])
        yield b
        b.close()


@pytest.fixture(autouse=True)
def _close_pages(request):
    """Each open page polls the memory monitor every second and redraws its plot: the pages a
    test left open kept a dozen Chromium renderers busy (load average 20 on the 2-core machine)."""
    yield
    if "browser" in request.fixturenames:
        for context in request.getfixturevalue("browser").contexts:
            context.close()


def _page(browser, app, locale="en-US"):
    page = browser.new_page(viewport={"width": 1400, "height": 1100}, locale=locale)
    page.goto(app.url)
    page.wait_for_selector("#generate")
    return page


def _shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _log_in(page, url: str, user: str, password: str) -> None:
    """Open the page under --auth and log in through Gradio's form."""
    page.goto(url)
    page.locator("input[type=password]").wait_for(timeout=30_000)
    page.locator("input[type=text]").first.fill(user)
    page.locator("input[type=password]").fill(password)
    page.get_by_role("button", name=re.compile("login", re.I)).click()
    page.wait_for_selector("#generate", timeout=30_000)


def _stats_text(page):
    return page.locator("#stats").inner_text()


def test_upload_preset_generate_restart(browser, app):
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_female.wav"))
    page.locator("#text textarea").fill("Hello from a real browser. The voice should follow the prompt.")
    page.locator("#presets input").click()
    page.get_by_role("option", name="happy", exact=True).click()
    page.wait_for_function("document.querySelector('#instruction textarea').value === 'happy'")
    _shot(page, "01-filled")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    _shot(page, "02-generated")
    stats = _stats_text(page)
    audio_s = float(re.search(r'audio_s\W*([0-9.]+)', stats).group(1))
    assert 2.0 < audio_s < 8.0
    assert 'happy' in stats
    # Share only said "Must be on Spaces to share." off a Space (helper-71).
    assert page.locator("#output_audio [aria-label='Share'], #output_audio [title='Share']").count() == 0
    # Every download was named audio.wav (helper-65).
    with page.expect_download(timeout=15_000) as download:
        page.locator("#output_audio a[download], #output_audio button[aria-label='Download']").first.click()
    assert re.fullmatch(r"speech-[0-9a-f]{12}\.wav", download.value.suggested_filename), download.value.suggested_filename
    old_pid = re.search(r"pid (\d+)", page.locator("#monitor_status").inner_text()).group(1)

    page.locator("#restart").click()
    page.wait_for_function("document.querySelector('#restart_result').innerText.includes('Restarted in')",
                           timeout=120_000)
    result = page.locator("#restart_result").inner_text()
    assert f"pid {old_pid} → " in result
    new_pid = re.search(r"→ (\d+)", result).group(1)
    assert new_pid != old_pid
    page.wait_for_function(f"document.querySelector('#monitor_status').innerText.includes('ready · pid {new_pid}')",
                           timeout=10_000)
    _shot(page, "03-restarted")
    page.locator("#generate").click()
    page.wait_for_function(f"document.querySelector('#stats').innerText.includes('{new_pid}')",
                           timeout=90_000)
    _shot(page, "04-generated-again")
    # A press within --restart-cooldown: a pop-up says why; the box keeps the last report, not
    # a bare "Error" (helper-77).
    page.locator("#restart").click()
    page.get_by_text(re.compile("Restart is allowed once every")).first.wait_for(timeout=15_000)
    page.wait_for_timeout(500)
    box = page.locator("#restart_result").inner_text()
    assert "Restarted in" in box and "Error" not in box, box


def test_invalid_upload_shows_readable_error_and_page_still_works(browser, app, tmp_path):
    page = _page(browser, app)
    bad = tmp_path / "notes.wav"
    bad.write_text("this is a text file, not a recording\n" * 30)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(bad))
    page.locator("#text textarea").fill("This should not be spoken.")
    page.locator("#generate").click()
    error = page.get_by_text(re.compile("could not be decoded|Upload a WAV"))
    error.first.wait_for(timeout=30_000)
    _shot(page, "05-invalid-upload")
    page.locator("#prompt_audio button[aria-label='Clear']").first.click()
    page.locator("#text textarea").fill("The page still works after a bad upload.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)


def test_an_unusable_prompt_says_so_when_it_is_uploaded(browser, app, tmp_path):
    """A text file named .wav showed a 0:00 player without a word until Generate refused it, and
    the message ended in FFmpeg's "[Errno 1094995529]" (helper-78). A usable prompt says nothing."""
    page = _page(browser, app)
    toasts = "[...document.querySelectorAll('[data-testid=\"toast-body\"], .toast-body')].map(t => t.innerText).join('|')"
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_female.wav"))
    page.locator("#prompt_audio audio").first.wait_for(state="attached", timeout=30_000)
    page.wait_for_timeout(3000)
    assert page.evaluate(toasts) == "", page.evaluate(toasts)
    page.locator("#prompt_audio button[aria-label='Clear']").first.click()
    bad = tmp_path / "notes.wav"
    bad.write_text("this is a text file, not a recording\n" * 30)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(bad))
    page.wait_for_function(f"({toasts}).includes('could not be decoded')", timeout=30_000)
    assert "Errno" not in page.evaluate(toasts), page.evaluate(toasts)
    # Named, since it may come after the file was replaced (helper-79).
    assert "notes.wav: The prompt audio could not be decoded" in page.evaluate(toasts), page.evaluate(toasts)
    assert page.locator("#generate").is_enabled()


@pytest.mark.parametrize("maker", ["webm_opus", "m4a_aac", "phone_3gp", "apple_caf", "camera_avi", "video_m4v"])
def test_browser_recordings_saved_as_files_are_accepted(browser, app, tmp_path, maker):
    """Chromium gives a .webm file the type video/webm, and Gradio's audio upload accepts only
    audio/* types: a browser recording saved as .webm was refused ("Invalid file type") and the
    request ran in the built-in voice (thirty-fifth newcomer session); so were a phone's .3gp,
    Apple's .caf and .m4v, and a camera's .avi (forty-sixth)."""
    from .. import audio_corpus, make_hostile_corpus

    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    path = getattr(make_hostile_corpus, maker)(samples, sr, tmp_path)
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(path))
    page.locator("#text textarea").fill("A recording saved by the browser.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    stats = _stats_text(page)
    assert re.search(r'prompt_s\W*[0-9]', stats) and "built-in voice" not in stats, stats


@pytest.mark.parametrize("name,container", [("prompt.w64", "W64"), ("prompt.rf64", "RF64"), ("recording", "WAV")])
def test_wave64_rf64_and_files_without_an_extension_are_accepted(browser, app, tmp_path, name, container):
    """The page refused RF64 and Wave64 files, and a WAV with no extension (the browser gives it no
    type), with Gradio's "Invalid file type", while the API decodes them (helper-129)."""
    import soundfile as sf

    samples, sr = sf.read(PROMPTS_DIR / "xtts_male.wav")
    sf.write(tmp_path / name, samples, sr, format=container)
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(tmp_path / name))
    page.locator("#text textarea").fill("A file of another kind.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    stats = _stats_text(page)
    assert re.search(r'prompt_s\W*[0-9]', stats) and "built-in voice" not in stats, stats


@pytest.mark.parametrize("name", ["notes.txt", "photo.png"])
def test_a_file_that_is_no_audio_is_refused_in_words_and_generate_does_not_use_the_built_in_voice(
        browser, app, tmp_path, name):
    """A .txt or .png chosen as the prompt was dropped by Gradio with a list of MIME types, and
    Generate then spoke in the built-in voice as if no prompt had been given (helper-133). It now
    reaches the server's check, which says it is not audio, and Generate is refused the same way."""
    (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40 if name.endswith(".png")
                                  else b"this is a text file, not a recording\n" * 30)
    page = _page(browser, app)
    toasts = "[...document.querySelectorAll('[data-testid=\"toast-body\"], .toast-body')].map(t => t.innerText).join('|')"
    page.locator("#prompt_audio input[type=file]").set_input_files(str(tmp_path / name))
    page.wait_for_function(f"({toasts}).includes('{name}: The prompt audio could not be decoded')", timeout=30_000)
    assert "Invalid file type" not in page.evaluate(toasts), page.evaluate(toasts)
    page.locator("#text textarea").fill("This must not be spoken in the built-in voice.")
    page.locator("#generate").click()
    page.wait_for_function(f"({toasts}).split('could not be decoded').length > 2", timeout=60_000)
    assert "audio_s" not in _stats_text(page) and "built-in voice" not in page.evaluate(toasts), page.evaluate(toasts)


def test_generate_while_recording_waits_for_the_recording(browser, app):
    """Generate pressed while the prompt is still being recorded ran the request without it, in
    the built-in voice, with only an Info pop-up (forty-sixth newcomer session). The page now
    holds the press and says to press Stop; after Stop, Generate clones the recorded voice."""
    page = _page(browser, app)
    page.locator("#prompt_audio button[aria-label='Record audio']").first.click()
    page.locator("#prompt_audio .record-button").click()
    assert page.locator("#microphone_note").count() == 0, "localhost is a secure context: the microphone works"
    page.wait_for_timeout(4000)  # 4 s of the fake microphone's speech
    page.locator("#text textarea").fill("Spoken in the recorded voice.")
    page.locator("#generate").click()
    note = page.locator("#recording_note")
    note.wait_for(timeout=5000)
    assert "press Stop" in note.inner_text()
    page.wait_for_timeout(2000)
    assert "audio_s" not in _stats_text(page), "Generate ran while the prompt was still being recorded"
    _shot(page, "generate-while-recording")
    # Pressed right after Stop, before the recording's upload had begun, Generate ran in the built-in
    # voice (a CI run on a busy machine): the upload is held here to make that moment last.
    held, released = [], []
    page.route(re.compile(r".*/gradio_api/upload.*"), lambda route: route.continue_() if released else held.append(route))
    page.locator("#prompt_audio .stop-button").click()
    note.wait_for(state="detached", timeout=10_000)
    page.locator("#generate").click()
    page.get_by_text("The prompt audio is still uploading").first.wait_for(timeout=10_000)
    page.wait_for_timeout(1000)
    assert "audio_s" not in _stats_text(page), "Generate ran before the recording was on the server"
    released.append(True)
    for route in held:
        route.continue_()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    stats = _stats_text(page)
    assert re.search(r'prompt_s\W*[0-9]', stats) and "built-in voice" not in stats, stats


def test_generate_while_the_prompt_uploads_waits_for_the_upload(browser, app):
    """Generate pressed while the prompt was still uploading ran the request without it, in the
    built-in voice (this session's CI run, under load, with a phone's .3gp). The press now waits
    for the upload, says so, and then runs with the prompt, once however often it was pressed
    (each held press clicked again once the upload arrived: on a busy machine, one run and two
    "already being synthesized" pop-ups; on an idle one Gradio dropped the later clicks).
    The upload is slowed to 100 kB/s."""
    completed_before = app.status()["completed"]
    page = _page(browser, app)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                  "uploadThroughput": 100_000})
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))  # 762 kB
    page.locator("#text textarea").fill("Spoken in the uploaded voice.")
    page.locator("#prompt_audio .uploading").first.wait_for(timeout=10_000)
    page.locator("#generate").click()
    note = page.locator("#uploading_note")
    note.wait_for(timeout=5000)
    assert "still uploading" in note.inner_text() and "locked until then" in note.inner_text()
    # An edit while the press waited was the text spoken (helper-67): the fields are locked.
    assert not page.locator("#text textarea").is_editable()
    assert not page.locator("#instruction textarea").is_editable()
    assert page.locator("#seed input").is_disabled()
    page.locator("#generate").click()
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=120_000)
    stats = _stats_text(page)
    assert re.search(r'prompt_s\W*[0-9]', stats) and "built-in voice" not in stats, stats
    assert page.locator("#text textarea").is_editable() and page.locator("#seed input").is_enabled()
    assert page.locator("#uploading_note").count() == 0
    page.wait_for_timeout(8000)  # time for any second request to run, or be refused as a duplicate
    assert app.status()["completed"] - completed_before == 1, app.status()
    toasts = page.locator(".toast-body").all_inner_texts()
    assert not toasts, toasts


def test_the_chinese_recording_note_names_the_button_as_the_page_does(browser, app):
    """The zh-CN note said to press "Stop", a button the Chinese page calls 停止 (helper-71)."""
    page = _page(browser, app, locale="zh-CN")
    page.locator("#prompt_audio button[aria-label='Record audio']").first.click()
    page.locator("#prompt_audio .record-button").click()
    page.wait_for_timeout(1000)
    page.locator("#generate").click()
    note = page.locator("#recording_note")
    note.wait_for(timeout=5000)
    stop = page.locator("#prompt_audio .stop-button").inner_text().strip()
    assert stop == "停止" and f"“{stop}”" in note.inner_text(), (stop, note.inner_text())
    page.locator("#prompt_audio .stop-button").click()


def test_generate_held_for_an_upload_that_is_refused_is_dropped(browser, tmp_path):
    """A held Generate ran in the built-in voice after the upload was refused (no room for it:
    helper-61). The press is dropped and the note says why; nothing is synthesized."""
    from ..conftest import serving

    with serving("--engine", "tests.fault_engines:FaultEngine", "--temp-reserve-mb", "100000000",
                 env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        page = _page(browser, app)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 400, "downloadThroughput": -1,
                                                      "uploadThroughput": 50_000})
        page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
        page.locator("#prompt_audio .uploading").first.wait_for(timeout=10_000)
        page.locator("#generate").click()
        note = page.locator("#uploading_note")
        note.wait_for(timeout=5000)
        page.wait_for_function("(document.getElementById('uploading_note') || {}).textContent?.includes('did not upload')",
                               timeout=60_000)
        page.wait_for_timeout(3000)
        assert "audio_s" not in _stats_text(page), "the held press ran without the refused prompt"
        assert app.status()["completed"] == 0
        assert page.locator("#text textarea").is_editable(), "the fields stayed locked after the refusal"
        # The pop-up shows the server's message alone, not 'HTTP 507: {"detail": ...}'.
        toasts = page.locator("[data-testid='toast-text']").all_inner_texts()
        assert any(t.startswith("The server has no room for uploads now") for t in toasts), toasts
        assert not any("{" in t or "HTTP 507" in t for t in toasts), toasts


def test_recording_over_plain_http_from_another_address_says_why(browser):
    """Browsers allow the microphone only on https or localhost pages: over plain http from
    another machine Gradio showed only "No microphone found" (forty-sixth newcomer session).
    The page now says why and what works (upload, https, an SSH tunnel)."""
    from ..conftest import network_address, serving

    address = network_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback")
    with serving("--host", "0.0.0.0") as remote:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(f"http://{address}:{remote.port}/")
        page.wait_for_selector("#generate")
        assert page.evaluate("window.isSecureContext") is False
        page.locator("#prompt_audio button[aria-label='Record audio']").first.click()
        note = page.locator("#microphone_note")
        note.wait_for(timeout=5000)
        text = note.inner_text()
        assert "https://" in text and "localhost" in text and "Upload a recording" in text, text
        # The tunnel names the port the app serves on (it said 7860 whatever it was: helper-72).
        assert f"ssh -L {remote.port}:127.0.0.1:{remote.port} server" in text, text
        _shot(page, "microphone-on-plain-http")


def test_upload_over_the_limit_says_its_size_and_what_fits(browser, app, tmp_path):
    """A file over --max-upload-mb got only Gradio's "exceed the maximum allowed size of 20.0 Mb"
    (forty-sixth newcomer session); the page now gives the file's size, the limit and the way out,
    and a good upload after it clears the note."""
    import numpy as np
    import soundfile as sf

    from ..audio_corpus import read

    samples, sr = read(PROMPTS_DIR / "xtts_male.wav")
    big = tmp_path / "interview.wav"
    sf.write(big, np.tile(samples.astype(np.float32), 16)[:, None].repeat(2, axis=1), sr, subtype="FLOAT")
    assert big.stat().st_size > 21 * 2**20
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(big))
    note = page.locator("#upload_note")
    note.wait_for(timeout=5000)
    text = note.inner_text()
    assert f"{big.stat().st_size / 2**20:.1f} MiB" in text and "limited to 20 MiB (--max-upload-mb)" in text, text
    assert "3-10 s" in text, text
    # Generate right after the refusal ran in the built-in voice (helper-67): the press is dropped
    # once, saying why.
    completed_before = app.status()["completed"]
    page.locator("#text textarea").fill("Spoken in the voice that did not upload.")
    page.locator("#generate").click()
    page.wait_for_function("(document.getElementById('uploading_note') || {}).textContent?.includes('did not upload')",
                           timeout=5000)
    page.wait_for_timeout(3000)
    assert app.status()["completed"] == completed_before, app.status()
    assert page.locator("#upload_note").count() == 1  # the refusal the dropped press's note points to
    # Just over the limit: as many decimals as show that it is over ("20.0 MB" of "20.0 MB" before).
    just_over = tmp_path / "just_over.wav"
    just_over.write_bytes((PROMPTS_DIR / "xtts_male.wav").read_bytes()[:44] + bytes(20 * 2**20 + 2000 - 44))
    page.locator("#prompt_audio input[type=file]").set_input_files(str(just_over))
    note.wait_for(timeout=5000)
    page.wait_for_function("document.querySelector('#upload_note').innerText.includes('20.002 MiB')", timeout=5000)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    note.wait_for(state="detached", timeout=5000)


def test_file_name_is_not_rendered_as_html(browser, app, tmp_path):
    """Gradio's "Invalid file type" pop-up renders the file name as HTML: "<u>x<u>.txt" came out
    underlined (forty-sixth newcomer session). Names lose markup characters before Gradio sees them."""
    bad = tmp_path / "<u>x<u>.txt"
    bad.write_text("not a recording\n")
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(bad))
    toast = page.locator(".toast-body").first
    toast.wait_for(timeout=5000)
    assert "_u_x_u_.txt" in toast.inner_text()
    assert page.locator(".toast-body u").count() == 0


def test_chinese_interface_follows_browser_language(browser, app):
    page = _page(browser, app, locale="zh-CN")
    page.get_by_text("重启应用").first.wait_for(timeout=10_000)
    assert page.locator("#generate").inner_text().strip() == "生成"
    # The Chinese page's example was Chinese, which the embedded (English-only) engine refused on
    # the first try (helper-65): the page says the engine speaks English, in Chinese, and the example
    # is English. (An engine that speaks Chinese gets a Chinese example: helper-49.)
    assert page.locator("#english_only").inner_text().startswith("当前引擎只会说英语")
    assert page.locator("#text textarea").get_attribute("placeholder").startswith("Hello!")
    _shot(page, "06-zh-CN")


def test_memory_panel_updates_during_synthesis(browser, app):
    page = _page(browser, app)
    page.locator("#text textarea").fill("A sentence long enough to keep the worker busy for a moment while the panel ticks. " * 2)
    seen = set()
    page.locator("#generate").click()
    for _ in range(12):
        seen.add(page.locator("#monitor_status").inner_text())
        page.wait_for_timeout(400)
    assert len(seen) >= 2, seen


def test_a_long_request_shows_its_segments_all_along(browser, app):
    """The segment progress showed for a moment after each segment and the page looked idle in
    between (each 0.25 s yield replaced it; helper-86); before the first segment it showed nothing."""
    page = _page(browser, app)
    page.locator("#text textarea").fill(" ".join(["This long text keeps the worker busy for a while, "
                                                  "sentence after sentence."] * 8))
    page.locator("#generate").click()
    page.wait_for_function("/0\\/\\d+ segment/.test(document.querySelector('#stats').innerText)", timeout=20_000)
    samples = []
    for _ in range(30):  # 3 s, within the run
        samples.append(page.locator("#stats").inner_text())
        page.wait_for_timeout(100)
    running = [s for s in samples if "audio_s" not in s]
    shown = [s for s in running if re.search(r"\d+/\d+ segment", s)]
    assert len(running) >= 15 and len(shown) >= 0.6 * len(running), samples


def test_memory_plot_names_its_lines_and_uses_a_24_hour_clock(browser, app):
    """The legend under the plot (which line is the worker, which the web process) is visible,
    not clipped by the plot's block, and the time axis reads like 21:47:05, not 09 PM."""
    page = _page(browser, app)
    page.wait_for_selector("#memory_plot .role-legend-label", state="attached", timeout=30_000)
    page.wait_for_timeout(1500)  # a few monitor ticks, so the time axis has labels
    _shot(page, "memory-plot")
    block = page.locator("#memory_plot").bounding_box()
    overflow = page.evaluate("getComputedStyle(document.querySelector('#memory_plot')).overflow")
    labels = page.locator("#memory_plot .role-legend-label")
    names = labels.all_text_contents()
    assert "worker RSS" in names and "web process RSS" in names, names
    for i in range(labels.count()):
        box = labels.nth(i).bounding_box()
        assert overflow == "visible" or box["y"] + box["height"] <= block["y"] + block["height"], (box, block)
    ticks = page.locator("#memory_plot .role-axis-label text").all_text_contents()
    assert any(re.fullmatch(r"\d{2}:\d{2}:\d{2}", t) for t in ticks), ticks


def test_notes_pop_up_in_the_page(browser, app):
    """Without prompt audio the built-in voice speaks; the page says so in a pop-up, not only
    inside the stats JSON."""
    page = _page(browser, app)
    page.locator("#text textarea").fill("Nobody uploaded a voice for this one.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    page.wait_for_function("[...document.querySelectorAll('[data-testid=\"toast-body\"], .toast-body')]"
                           ".some(t => t.innerText.includes('spoken in the built-in voice'))", timeout=10_000)


def test_double_click_on_generate_synthesizes_once(browser, app):
    """With a prompt uploaded, a double click and one more click used to queue the same
    synthesis two or three times (Gradio's once-per-click guard has a gap); now one runs."""
    import json
    import urllib.request

    def health():
        with urllib.request.urlopen(app.url + "healthz", timeout=10) as r:
            return json.loads(r.read())

    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    page.wait_for_timeout(1500)
    page.locator("#text textarea").fill("The morning was quiet and the river ran slowly past the old mill. " * 4)
    before = health()["completed"]
    page.locator("#generate").dblclick()
    page.wait_for_timeout(300)
    page.locator("#generate").click()
    # Told as news, not as an error: Gradio 6 heads grouped pop-ups with their kind, and "Error"
    # for a press whose result was on its way read as a fault (helper-49).
    page.locator(".toast-body.info").filter(has_text="already being synthesized").first.wait_for(timeout=30_000)
    assert page.locator(".toast-body.error").count() == 0
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=120_000)
    for _ in range(40):  # until nothing waits or runs
        status = health()
        if status["queue_depth"] == 0 and status["in_flight"] is None:
            break
        page.wait_for_timeout(500)
    assert status["completed"] - before == 1, status


def test_generate_with_a_new_text_while_the_first_runs_replaces_it(browser, app):
    """Generate pressed again with a new text while the tab's own request ran did nothing, with no
    sign of it (Gradio's trigger_mode "once"; forty-ninth newcomer session). Then both ran, but the
    page shows the newest press's outputs only: the first result was made, recorded ``ok`` and
    never shown (helper-88). The newer request now replaces the first, and says so."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    page.wait_for_timeout(1500)
    page.locator("#text textarea").fill("The morning was quiet and the river ran slowly past the old mill. " * 5)
    page.locator("#generate").click()
    page.locator("#stats .eta-bar, #stats .progress-text").first.wait_for(timeout=20_000)
    page.wait_for_timeout(1000)
    page.locator("#text textarea").fill("A second, short text.")
    page.locator("#generate").click()
    page.get_by_text("Your earlier request from this tab was stopped").first.wait_for(timeout=30_000)
    page.wait_for_function("document.querySelector('#stats').innerText.match(/text_chars\\W*21\\b/)",
                           timeout=120_000)
    page.wait_for_timeout(1500)  # the ledger table ticks
    cells = [c.strip() for c in page.locator("#ledger").inner_text().split("pid", 1)[1].split("\n") if c.strip()]
    # Latest first: the second text made, the first stopped (its reason is in the ledger file).
    assert cells[1:3] == ["ok", "21"] and cells[10] in ("abandoned", "cancelled"), cells[:20]


def test_2000_character_text_gives_complete_audio(browser, app):
    from bench.texts import text_of_length

    text = text_of_length(2000)
    page = _page(browser, app)
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    # Per-segment progress shows while it runs ("3/13 segment").
    page.get_by_text(re.compile(r"[1-9]\d*/\d+ segment")).first.wait_for(timeout=60_000)
    _shot(page, "07-long-text-progress")
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=240_000)
    _shot(page, "08-long-text-done")
    stats = _stats_text(page)
    segments = int(re.search(r'segments\W*(\d+)', stats).group(1))
    audio_s = float(re.search(r'audio_s\W*([0-9.]+)', stats).group(1))
    assert segments >= 10
    assert 2000 / 25 < audio_s < 2000 / 8


def test_cosyvoice_streaming_plays_in_the_page(browser, tmp_path):
    """--stream with the CosyVoice stand-in: the audio player gets a stream while the request runs,
    the stats say the mode, and the speaker dropdown and inline-tag help are on the page. With
    --auth: the stream's routes ask for the login (helper-51), which the logged-in page sends."""
    from ..conftest import RunningApp
    from ..cosyvoice_model import STANDIN_REPO, make_model_dir

    model = make_model_dir(tmp_path / "model", 3, speakers=("中文女",))
    app = RunningApp("--engine", "cosyvoice", "--model-dir", str(model), "--cosyvoice-repo", str(STANDIN_REPO),
                     "--stream", "--auth", "alice:pw-for-the-stream", "--metrics-token", "tok")
    try:
        app.wait_healthy(120, token="tok")
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        _log_in(page, app.url, "alice", "pw-for-the-stream")
        assert "[breath]" in page.locator("#inline_tags").inner_text()
        page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "cv_zero_shot_prompt.wav"))
        page.locator("#prompt_text textarea").fill("希望你以后能够做的比我还好呦。")
        page.locator("#text textarea").fill("A sentence streamed to the page. And a second one, to make more chunks.")
        page.locator("#generate").click()
        page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
        _shot(page, "09-cosyvoice-streamed")
        assert "zero-shot" in _stats_text(page)
        # The streamed player holds audio (Gradio serves it as an HLS playlist of encoded chunks).
        page.wait_for_function("""() => { const a = document.querySelector('#output_audio audio');
                                          return a && (a.src || a.currentSrc) && a.duration > 0.5; }""",
                               timeout=30_000)
    finally:
        app.stop()


def test_nothing_a_user_types_is_rendered_as_html(browser, app):
    """HTML in the text, instruction and prompt text comes back in stats, notes, ledger and
    messages as text: no injected element appears and no handler runs."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "f5_basic_ref_en.wav"))
    page.locator("#prompt_text textarea").fill('<b id="injected-b" onmouseover="window.__xss=3">bold</b>')
    page.locator("#text textarea").fill('Hello <img id="injected-img" src="x" onerror="window.__xss=1"> there.')
    page.locator("#instruction textarea").fill('<script>window.__xss=2</script><img src=x onerror="window.__xss=4">')
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    # The notes quote the tags removed from the instruction and prompt text, as text.
    assert "Markup removed from the instruction: <script> with its content, <img>." in _stats_text(page)
    assert "Markup removed from the prompt text: <b>, </b>." in _stats_text(page)
    # Gradio renders pop-up messages as HTML: the note on the removed tag showed "removed: ." (a user run, tenth session).
    toast = page.locator("[data-testid='toast-body']").filter(has_text="Markup removed").first
    toast.wait_for(timeout=5_000)
    assert "read aloud): <img>." in toast.inner_text()
    # An error message too: the same HTML with a Chinese text the embedded engine refuses.
    page.locator("#text textarea").fill('<img id="injected-err" src="x" onerror="window.__xss=5">'
                                        '今天天气很好，我们一起去公园散步吧。')
    page.locator("#generate").click()
    page.get_by_text(re.compile("English")).first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)  # the ledger and panel tick
    _shot(page, "10-html-as-text")
    # The refusal does not leave the previous result's stats under it (thirty-sixth newcomer session).
    assert "audio_s" not in _stats_text(page)
    page.locator("#text textarea").fill("<p><br></p>")
    page.locator("#generate").click()
    toast = page.locator("[data-testid='toast-body']").filter(has_text="only markup").first
    toast.wait_for(timeout=30_000)
    assert "The text is only markup (<p>, <br>, </p>)" in toast.inner_text()
    assert page.evaluate("window.__xss") is None
    assert page.locator("#injected-img, #injected-b, #injected-err").count() == 0


def test_message_of_a_failed_request_stays_until_closed(browser, tmp_path):
    """A request can fail long after the click (a deadline, a worker that died twice), when its
    user has looked away: Gradio's pop-up closed itself after 10 s, leaving only "Error" badges.
    Messages about requests that waited or ran now stay until closed. (After a shutdown, Gradio
    replaces every pop-up with its own lasting "Connection to the server was lost".)"""
    from ..conftest import RunningApp

    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", env={"FAULT_ENGINE_DIR": str(tmp_path)})
    try:
        app.wait_healthy()
        page = _page(browser, app)
        _generate_and_see_the_message_stay(page, "invalid: the fault engine refuses this one",
                                           "The fault engine refuses this text")
        _shot(page, "failure_message_stays")
        page.close()
    finally:
        app.stop()


def _generate_and_see_the_message_stay(page, text: str, message: str) -> None:
    """Generate ``text``; the pop-up saying ``message`` must still be up after 12 s (Gradio's
    pop-ups close after 10 s, as a refusal of the input does)."""
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    toast = ("[...document.querySelectorAll('[data-testid=\"toast-body\"], .toast-body')]"
             f".some(t => t.innerText.includes({message!r}))")
    page.wait_for_function(toast, timeout=30_000)
    page.wait_for_timeout(12_000)
    assert page.evaluate(toast), f"the message {message!r} closed itself"


def test_a_busy_refusal_stays_until_closed(browser, tmp_path):
    """A press turned away as busy showed its reason for 10 s, then only "Error" badges: a user
    who looked away could not tell why nothing ran (helper-77). Here the tab's second request is
    over its share of the queue (--max-per-client 1): one tab alone, no other clients to time."""
    from ..conftest import RunningApp

    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--max-per-client", "1",
                     env={"FAULT_ENGINE_DIR": str(tmp_path)})
    try:
        app.wait_healthy()
        page = _page(browser, app)
        page.locator("#text textarea").fill("sleep:40 the request that holds this tab's place")
        page.locator("#generate").click()
        page.wait_for_function("document.querySelector('#monitor_status').innerText.includes('busy')", timeout=30_000)
        _generate_and_see_the_message_stay(page, "turned away", "You already have 1 request waiting or running")
        page.close()
    finally:
        app.stop()


def _press_while_busy(page, text: str, button: str, waiting_text: str) -> None:
    """Generate ``text``, press ``button`` while it runs, and wait for ``waiting_text`` in its
    report's box."""
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#monitor_status').innerText.includes('busy')", timeout=30_000)
    page.locator(button).click()
    box = "#restart_result" if button == "#restart" else "#free_cache_result"
    page.wait_for_function(f"document.querySelector({box!r}).innerText.includes({waiting_text!r})", timeout=5_000)


def test_restart_says_what_it_waits_for(browser, tmp_path):
    """A Restart pressed while a request runs waits for it (up to --restart-grace); the page
    showed Gradio's estimate from earlier restarts ("processing | 21.6/2.5s") meanwhile. It now
    says what the restart waits for, then shows the report. So does Free cache."""
    from ..conftest import RunningApp

    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--restart-cooldown", "0",
                     env={"FAULT_ENGINE_DIR": str(tmp_path)})
    try:
        app.wait_healthy()
        page = _page(browser, app)
        _press_while_busy(page, "sleep:8 a request that runs while Restart is pressed", "#restart",
                          "waiting for the running request to finish (at most 30 s")
        assert "/" not in page.locator("#restart_result").inner_text()  # no "21.6/2.5s" estimate there
        _shot(page, "restart_waiting")
        page.wait_for_function("document.querySelector('#restart_result').innerText.includes('Restarted in')",
                               timeout=60_000)
        assert "waited for the running request" in page.locator("#restart_result").inner_text()
        # Free cache waits for the running request too, and says so instead of showing nothing.
        _press_while_busy(page, "sleep:6 a request that runs while Free cache is pressed", "#free_cache",
                          "Freeing cached memory: waiting for the running request")
        page.wait_for_function("document.querySelector('#free_cache_result').innerText.includes('Freed caches')",
                               timeout=60_000)
        # Free cache and then Restart while a request runs: each report stays in its own box (the
        # Free cache report, finishing last, took the one box; helper-62).
        first_report = page.locator("#restart_result").inner_text()
        _press_while_busy(page, "sleep:6 a request that runs while both are pressed", "#free_cache",
                          "Freeing cached memory: waiting for the running request")
        page.locator("#restart").click()
        page.wait_for_function("document.querySelector('#restart_result').innerText.includes('Restarted in') && "
                               f"document.querySelector('#restart_result').innerText !== {first_report!r} && "
                               "document.querySelector('#free_cache_result').innerText.includes('Freed caches')",
                               timeout=60_000)
        page.wait_for_timeout(2000)
        second_report = page.locator("#restart_result").inner_text()
        assert "Restarted in" in second_report and second_report != first_report, second_report
        # A Restart clears the free-cache report, which described the worker it ends (helper-68).
        page.locator("#restart").click()
        page.wait_for_function("document.querySelector('#free_cache_result').innerText.trim() === ''", timeout=5_000)
        page.close()
    finally:
        app.stop()


def _drop_connection_until_reloaded(page, offline_ms: int) -> None:
    """Take the page offline for ``offline_ms``, then wait for Gradio's reload and the note."""
    page.evaluate("window.__before_reload = true")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    conditions = {"latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", {"offline": True, **conditions})
    page.wait_for_timeout(offline_ms)
    cdp.send("Network.emulateNetworkConditions", {"offline": False, **conditions})
    page.wait_for_function("!window.__before_reload && document.getElementById('connection_note')", timeout=60_000)


def test_a_dropped_connection_keeps_the_visitors_text_settings_and_prompt(browser, app):
    """1.5 s offline while a request ran made Gradio reload the page once the server answered
    again: the request was stopped and the text, settings and prompt audio were gone, without a
    word (helper-71). They are put back after the reload, with a note saying what happened."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "f5_basic_ref_en.wav"))
    page.locator("#prompt_audio audio").first.wait_for(state="attached", timeout=30_000)
    text = " ".join(["This long text keeps the worker busy for a while, sentence after sentence."] * 12)
    page.locator("#text textarea").fill(text)
    page.locator("#instruction textarea").fill("calm")
    page.locator("#seed input").fill("42")
    page.locator("#seed input").blur()
    page.locator("#generate").click()
    page.locator("#stats .eta-bar, #stats .progress-text").first.wait_for(timeout=20_000)
    _drop_connection_until_reloaded(page, 2500)
    note = page.locator("#connection_note").inner_text()
    assert "did not finish" in note and "press Generate" in note and "could not" not in note, note
    assert page.locator("#text textarea").input_value() == text
    assert page.locator("#instruction textarea").input_value() == "calm"
    assert page.locator("#seed input").input_value() == "42"
    page.locator("#prompt_audio audio").first.wait_for(state="attached", timeout=30_000)
    _shot(page, "connection-dropped-restored")
    # The restored fields reach Gradio's state: Generate runs with them, in the prompt's voice.
    page.locator("#text textarea").fill("Back after the dropped connection.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    stats = _stats_text(page)
    # The seed's note comes only for a seed other than -1 (the embedded CPU engine cannot apply one).
    assert re.search(r'prompt_s\W*[0-9]', stats) and "calm" in stats and "seed was not applied" in stats, stats
    # The note's "did not finish" ended with the new request: it stayed beside its result (helper-86).
    assert page.locator("#connection_note").count() == 0


def test_a_login_that_ended_is_said_once(browser, tmp_path):
    """Under --auth, after a logout in another tab, Generate showed bare "Error" badges, an upload
    was refused in silence and the monitor froze (helper-71). The first 401 says the login ended."""
    from ..conftest import serving

    with serving("--engine", "tests.fault_engines:FaultEngine", "--auth", "alice:pw-that-ends",
                 env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        page = context.new_page()
        _log_in(page, app.url, "alice", "pw-that-ends")
        page.wait_for_timeout(2000)
        assert page.locator("#login_ended").count() == 0, "no note while the login holds"
        other = context.new_page()
        other.goto(app.url + "logout")
        other.close()
        page.locator("#text textarea").fill("sleep:0.1 after the logout")
        page.locator("#generate").click()
        note = page.locator("#login_ended")
        note.wait_for(timeout=15_000)
        assert "login has ended" in note.inner_text() and "Reload the page" in note.inner_text()
        # Not "copy your text first": it is kept, and comes back after the login (helper-84).
        assert "kept in this tab for 15 minutes" in note.inner_text(), note.inner_text()
        assert page.locator("#login_ended").count() == 1


def test_a_dropped_connection_after_a_result_offers_the_result_again(browser, app):
    """After the reload a finished result was gone from the page with no word of it (helper-73):
    the note links to its file, which stays on the server for --temp-file-ttl."""
    page = _page(browser, app)
    page.locator("#text textarea").fill("A short result to keep.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    page.wait_for_timeout(6000)  # idle: no request ran in the last seconds
    _drop_connection_until_reloaded(page, 3000)
    note = page.locator("#connection_note")
    assert "did not finish" not in note.inner_text() and "text and settings are back" in note.inner_text()
    link = note.locator("a")
    assert link.inner_text() == "Download the last result."
    response = page.request.get(link.get_attribute("href"))
    assert response.status == 200 and response.body()[:4] == b"RIFF"


def test_keyboard_focus_is_visible_on_the_slider_and_the_presets(browser, app):
    """Tabbing to the Speed slider and the presets field drew no outline and no shadow (helper-71)."""
    page = _page(browser, app)
    for selector in ("#speed input[type=range]", "#presets input"):
        page.locator(selector).first.focus()
        style = page.evaluate("""(s) => { const e = document.querySelector(s);
                                          return e.matches(':focus-visible') ? getComputedStyle(e).outlineStyle : 'not focused'; }""",
                              selector)
        assert style == "solid", (selector, style)


def _reload_and_read_the_note(page) -> str:
    """Reload ``page`` and return the restore's note once it is shown."""
    page.reload()
    note = page.locator("#connection_note")
    note.wait_for(timeout=30_000)
    return note.inner_text()


def test_a_reload_during_a_request_says_so_and_a_page_left_at_once_keeps_the_text(browser, app):
    """F5 during a request brought the text back with "The connection to the server dropped", which
    it had not; and a second page of the app that took the saved text and was left at once (Back)
    used it up: the page gone back to was blank (helper-78)."""
    page = _page(browser, app)
    text = " ".join(["This long text keeps the worker busy for a while, sentence after sentence."] * 12)
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    page.locator("#stats .eta-bar, #stats .progress-text").first.wait_for(timeout=20_000)
    page.reload()
    note = page.locator("#connection_note")
    note.wait_for(timeout=30_000)
    assert "reloaded or left" in note.inner_text() and "press Generate" in note.inner_text(), note.inner_text()
    assert "connection" not in note.inner_text().lower(), note.inner_text()
    assert page.locator("#text textarea").input_value() == text
    # Another page of the app in the same tab, left at once: the text comes back where one returns.
    page.goto(app.url + "?x=1")
    page.locator("#text textarea").wait_for(timeout=30_000)
    page.go_back()
    page.wait_for_function("document.querySelector('#text textarea') && document.querySelector('#text textarea').value"
                           f" === {text!r}", timeout=30_000)


def test_on_a_slow_link_the_note_says_the_prompt_is_back_only_once_it_is(browser, app):
    """After a reload on a slow link the note said the prompt audio was back 16 s before the upload
    that brings it back had ended (helper-86). Until then it says the upload is under way."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "cv_cross_lingual_prompt.wav"))
    page.locator("#prompt_audio a[href*='/file=']").first.wait_for(state="attached", timeout=30_000)
    page.locator("#text textarea").fill("Kept over a reload on a slow link.")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions",  # 606 KB up at 100 KB/s: about 6 s
             {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 100_000})
    note = _reload_and_read_the_note(page)
    assert "prompt audio is being uploaded again" in note and "prompt audio are back" not in note, note
    page.locator("#prompt_audio a[href*='/file=']").first.wait_for(state="attached", timeout=60_000)
    page.wait_for_function("document.getElementById('connection_note').innerText.includes('prompt audio are back')",
                           timeout=5_000)


def test_generate_pressed_while_the_prompt_is_being_brought_back_waits_for_it(browser, app):
    """On a slow link the restore's download of the prompt took 20 s with no note, and Generate
    pressed meanwhile spoke in the built-in voice (helper-90). The note comes at once, and the
    press waits for the prompt, then runs with it."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    page.locator("#prompt_audio a[href*='/file=']").first.wait_for(state="attached", timeout=30_000)
    page.locator("#text textarea").fill("Said in the prompt's voice after a reload.")
    held, released = [], []  # the restore's download of the prompt, answered when the test says so
    page.route(re.compile(r".*/file=.*xtts_male"),
               lambda route: route.continue_() if released else held.append(route))
    note = _reload_and_read_the_note(page)
    assert "prompt audio is being uploaded again" in note, note
    page.locator("#generate").click()
    page.get_by_text("The prompt audio is still uploading").first.wait_for(timeout=10_000)
    page.wait_for_timeout(1000)
    assert "audio_s" not in _stats_text(page)  # not run in the built-in voice meanwhile
    released.append(True)
    for route in held:
        route.continue_()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    assert re.search(r'prompt_s\W*[0-9]', _stats_text(page)), _stats_text(page)


def test_a_reload_during_the_prompts_upload_says_it_must_be_uploaded_again(browser, app):
    """A page reloaded (or dropped) while the prompt audio was still uploading said "Your text and
    settings are back" and nothing of the prompt, which was gone (helper-86), nor of the Generate
    press that waited for it (helper-94)."""
    page = _page(browser, app)
    held = []  # the upload never finishes
    page.route(re.compile(r".*/gradio_api/upload.*"), lambda route: held.append(route))
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    page.locator("#text textarea").fill("Typed while the prompt was uploading.")
    page.wait_for_function("[...document.querySelectorAll('#prompt_audio .uploading, #prompt_audio .progress-bar')]"
                           ".some(el => el.offsetParent !== null)", timeout=10_000)
    page.locator("#generate").click()  # held until the upload arrives (microphone.js)
    page.get_by_text("The prompt audio is still uploading").first.wait_for(timeout=10_000)
    note = _reload_and_read_the_note(page)
    assert "prompt audio could not be brought back: upload or record it again" in note, note
    # The held press was cut off too, and the note said nothing of it (helper-94).
    assert "while your request was waiting or running, so it did not finish" in note, note
    assert page.locator("#text textarea").input_value() == "Typed while the prompt was uploading."


def test_a_reload_after_a_result_does_not_say_the_request_was_cut_off(browser, app):
    """A reload 1.5 s after a result said the request "did not finish" and to press Generate again
    (a request seen running in the last 5 s counted; helper-79)."""
    page = _page(browser, app)
    page.locator("#text textarea").fill("A short one.")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelector('#stats').innerText.includes('audio_s')", timeout=90_000)
    page.wait_for_timeout(1500)
    note = _reload_and_read_the_note(page)
    assert "reloaded or opened again" in note and "did not finish" not in note, note
    assert page.locator("#connection_note a").inner_text() == "Download the last result."


def test_a_second_reload_in_a_row_keeps_the_prompt_and_the_word_that_a_request_was_cut_off(browser, app):
    """F5 during a request, then F5 again as soon as the page was back: the prompt still being
    uploaded again was lost without a word, and the note no longer said the request was cut off
    (helper-83)."""
    page = _page(browser, app)
    page.locator("#prompt_audio input[type=file]").set_input_files(str(PROMPTS_DIR / "xtts_male.wav"))
    page.locator("#prompt_audio a[href*='/file=']").first.wait_for(state="attached", timeout=30_000)
    page.locator("#text textarea").fill(" ".join(["A long text keeps the worker busy for a while."] * 10))
    page.locator("#generate").click()
    page.locator("#stats .eta-bar, #stats .progress-text").first.wait_for(timeout=20_000)
    page.reload()
    page.locator("#connection_note").wait_for(timeout=30_000)
    page.reload()  # at once: the prompt is still being fetched or uploaded again
    note = page.locator("#connection_note")
    note.wait_for(timeout=30_000)
    assert "did not finish" in note.inner_text() and "could not" not in note.inner_text(), note.inner_text()
    page.locator("#prompt_audio a[href*='/file=']").first.wait_for(state="attached", timeout=30_000)
    # A reload later on, with no request run since, does not say it again (helper-84).
    page.wait_for_timeout(11_000)
    note = _reload_and_read_the_note(page)
    assert "reloaded or opened again" in note and "did not finish" not in note, note


def test_a_reload_after_a_refusal_does_not_say_the_request_was_cut_off(browser, app):
    """A reload 4 s after a refusal said the request "did not finish" and to press Generate again,
    which would be refused again (helper-81)."""
    page = _page(browser, app)
    page.locator("#text textarea").fill("你好，今天天气很好。")
    page.locator("#generate").click()
    page.locator("[data-testid='toast-body']").filter(has_text="English only").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    note = _reload_and_read_the_note(page)
    assert "reloaded or opened again" in note and "did not finish" not in note, note


def test_a_result_that_is_gone_is_said_to_be_gone_not_linked(browser, app):
    """After the server restarted, the note's "Download the last result." was a 404 (a clean stop
    empties the temporary folder; helper-81)."""
    page = _page(browser, app)
    gone = app.url + "gradio_api/file=/tmp/no-such-folder/speech-000000000000.wav"
    page.evaluate("""(gone) => sessionStorage.setItem('cosyvoice_ui.connection_lost:/', JSON.stringify({
        at: Date.now(), cause: 'dropped', running: false, result: gone, fields: {text: 'Kept.'}}))""", gone)
    page.reload()
    note = page.locator("#connection_note")
    note.wait_for(timeout=30_000)
    page.wait_for_function("document.getElementById('connection_note').innerText.includes('no longer on the server')",
                           timeout=15_000)
    assert note.locator("a").count() == 0, note.inner_html()


def test_a_planted_restore_entry_brings_back_no_foreign_link_and_no_bad_number(browser, app):
    """The restore trusted what sessionStorage held, and that belongs to the origin: another app on
    the same host could plant an entry whose note linked to any site, whose prompt was fetched
    from any URL, and whose speed "abc" became 0.5 (helper-76). Only this app's own file links and
    numbers come back; text does."""
    page = _page(browser, app)
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.evaluate("""() => sessionStorage.setItem('cosyvoice_ui.connection_lost:/', JSON.stringify({
        at: Date.now(), running: false, prompt: 'https://evil.example/x.wav', result: 'https://evil.example/phish',
        fields: {text: 'Planted text comes back.', speed: 'abc', seed: '1e9999'}}))""")
    page.reload()
    note = page.locator("#connection_note")
    note.wait_for(timeout=30_000)
    assert note.locator("a").count() == 0, note.inner_html()
    assert "could not be brought back" in note.inner_text(), note.inner_text()
    assert page.locator("#text textarea").input_value() == "Planted text comes back."
    assert page.locator("#speed input[type=number]").input_value() == "1"
    assert page.locator("#seed input").input_value() == "-1"
    assert not [url for url in asked if "evil.example" in url], asked
    # An entry that is not JSON at all is dropped without an error.
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.evaluate("() => sessionStorage.setItem('cosyvoice_ui.connection_lost:/', '{not json')")
    page.reload()
    page.locator("#generate").wait_for(timeout=30_000)
    page.wait_for_timeout(2000)
    assert not errors and page.locator("#connection_note").count() == 0, errors
    assert page.evaluate("() => sessionStorage.getItem('cosyvoice_ui.connection_lost:/')") is None



def _page_framing():
    """A page at another origin (a free port of 127.0.0.1, the same site as the app) that shows
    the address in its ``?app=`` in an <iframe> under a bait button: (its address, its server)."""
    import html
    import http.server
    import threading
    from urllib.parse import parse_qs, urlsplit

    from ..conftest import free_port

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            framed = parse_qs(urlsplit(self.path).query).get("app", [""])[0]
            body = (f'<!doctype html><title>another app</title><button id="bait">Win a prize</button>'
                    f'<iframe id="framed" src="{html.escape(framed)}" width="1200" height="900"></iframe>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def _framed_app_shows(browser, page_url: str, app_url: str, wait_ms: int, shot: str, errors: list | None = None) -> bool:
    """Whether the app at ``app_url``, framed by the page at ``page_url``, shows its Generate;
    the page's and the frame's console errors go to ``errors``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.on("console", lambda m: errors.append(m.text) if errors is not None and m.type == "error" else None)
    page.goto(f"{page_url}/?app={app_url}")
    try:
        page.frame_locator("#framed").locator("#generate").wait_for(timeout=wait_ms)
        page.wait_for_timeout(2000)  # the page's own scripts run after the first paint
        return True
    except Exception:  # Playwright's TimeoutError: the frame never showed the app
        return False
    finally:
        _shot(page, shot)
        page.close()


def test_a_page_at_another_address_cannot_frame_the_app(browser, app):
    """A page on another port of the same host framed the logged-in app (the --auth cookie goes
    to a same-site frame) and a click on its bait pressed the frame's Restart (helper-99,
    clickjacking). The app now says frame-ancestors 'self': Chromium leaves the frame empty. An
    operator who embeds the app on purpose names the page with --frame-ancestors; then it shows,
    and its scripts run."""
    from ..conftest import serving

    page_url, server = _page_framing()
    try:
        assert not _framed_app_shows(browser, page_url, app.url, 8_000, "framed-refused")
        # From another site (localhost is not 127.0.0.1's site), as a Space's page frames its app:
        # the browser may refuse such a frame storage, and the page's script then stopped with a
        # SecurityError (helper-101).
        page_url = page_url.replace("127.0.0.1", "localhost")
        errors = []
        with serving("--frame-ancestors", f"'self' {page_url}") as embedded:
            assert _framed_app_shows(browser, page_url, embedded.url, 60_000, "framed-allowed", errors)
        assert not [e for e in errors if "custom JS" in e or "SecurityError" in e], errors
    finally:
        server.shutdown()
