"""Startup refuses bad configuration with a message that names the flag or variable, before the
model loads; a variable that is no setting is warned about, not ignored silently.

``parse_settings`` is called directly for the flag and variable checks; ``app.py`` is run for what
it checks itself (a port in use, an address it cannot serve on), which must fail in seconds,
without loading the worker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from cosyvoice_ui.settings import parse_settings

from .conftest import ROOT, free_port


@pytest.mark.parametrize("argv,fragment", [
    (["--port", "70000"], "port 70000 is outside 1-65535"),
    (["--port", "x"], "'x' is not a port number"),
    (["--max-queue", "0"], "--max-queue must be at least 1"),
    (["--request-timeout", "nan"], "is not a finite number"),
    (["--restart-cooldown", "-1"], "--restart-cooldown must be 0 (off) or more"),
    (["--auth", "alice"], "--auth must look like USER:PASSWORD"),
    # Gradio strips the user name typed: no one could log in (forty-fourth newcomer session).
    (["--auth", " alice : s3cret"], "--auth: the user name starts or ends with a space"),
    (["--auth", "alice:s3cret "], "--auth: the password starts or ends with a space (or another blank), which every "
                                  "login would then have to type too;"),  # not "Gradio strips the user name" (helper-145)
    (["--metrics-token", ""], "--metrics-token must not be empty"),
    (["--metrics-token", "  "], "--metrics-token must not be empty"),
    # Never matched a UTF-8 client, nor could a space be sent (thirty-third newcomer session).
    (["--metrics-token", "tøken"], "only ASCII letters, digits"), (["--metrics-token", "two words"], "openssl rand -hex 32"),
    (["--device", "gpu"], "--device 'gpu': use auto, cpu, cuda or cuda:N"),
    (["--ledger", "{tmp}"], "is a folder; give a file name inside it"),
    (["--ledger", "{tmp}/missing/ledger.jsonl"], "the folder does not exist"),
    (["--ledger", "{tmp}/a_file/logs/ledger.jsonl"], "'a_file' on its way is a file, not a folder"),  # helper-56
    (["--gpu-log", "{tmp}/a_file/gpu.csv"], "'a_file' on its way is a file, not a folder"),
    (["--ledger", "/proc/version"], "is a system file"),
    # A file named as the model folder was called "no such folder" (thirty-sixth newcomer session).
    (["--engine", "cosyvoice", "--model-dir", "/etc/hostname", "--cosyvoice-repo", "/tmp"], "is a file, not a folder"),
    (["--gpu-log", "{tmp}"], "--gpu-log"),
    (["--gpu-log", "{tmp}/x.log", "--ledger", "{tmp}/../{tmp.name}/x.log"], "--gpu-log and --ledger name the same file"),
    # The GPU log's rotation replaced a ledger named as its PATH.1 (helper-152).
    (["--gpu-log", "{tmp}/x.log", "--ledger", "{tmp}/x.log.1"], "--gpu-log and --ledger name the same file"),
    # Past what a thread can wait for, these made Restart, Free cache and SIGTERM raise
    # OverflowError, and the app never exited (fifteenth newcomer session).
    (["--restart-grace", "1e10"], "--restart-grace 1e+10 s is longer than the longest supported, 2592000 s"),
    (["--request-timeout", "1e300"], "--request-timeout 1e+300 s is longer than"),
    (["--worker-start-timeout", "1e12"], "--worker-start-timeout 1e+12 s is longer than"),
    (["--restart-cooldown", "1e300"], "--restart-cooldown 1e+300 s is longer than"),
    (["--idle-unload-after", "1e300"], "--idle-unload-after 1e+300 s is longer than"),
    (["--idle-unload-after", "-5"], "--idle-unload-after must be a positive number of seconds, or off"),
    (["--retry-failed-load-after", "-5"], "--retry-failed-load-after must be a positive number of seconds"),
    (["--retry-failed-load-after", "1e300"], "--retry-failed-load-after 1e+300 s is longer than"),
    (["--idle-unload-after", "soon"], "'soon' is not a number; give seconds, or off"),
    (["--ledger", ""], "--ledger: empty; give a file path, or off"),
    (["--gpu-log", " "], "--gpu-log: empty; give a file path, or off"),
    (["--temp-file-ttl", "1e300"], "--temp-file-ttl 1e+300 s is longer than"),
    (["--monitor-interval", "1e9"], "--monitor-interval 1000000000 s is longer than"),
    (["--monitor-interval", "0.0001"], "--monitor-interval 0.0001 s would keep a core busy"),
    (["--max-queue", "99999999999"], "--max-queue 99999999999 is over the most supported, 1000"),
    (["--max-text-chars", "1000000000"], "--max-text-chars 1000000000 is over the most supported"),
    (["--max-upload-mb", "1e9"], "--max-upload-mb 1e+09 is over the most supported, 1024"),
    (["--leak-window", "100000"], "--leak-window 100000 is over"),
    (["--allowed-host", "a b"], "--allowed-host 'a b' is not a host name"),  # accepted silently (helper-53)
    (["--allowed-host", "https://proxy.example"], "not a URL"),  # allowed the host "https" (helper-54)
    # uvicorn compares a host name as text: it would never match a proxy's address (helper-99).
    (["--forwarded-allow-ips", "proxy.local"], "--forwarded-allow-ips 'proxy.local' is not an address or network"),
    # A ";" would add directives to the policy, a "," another policy.
    (["--frame-ancestors", "'self'; script-src *"], "is not a frame-ancestors source list"),
    (["--frame-ancestors", "  "], "is not a frame-ancestors source list"),
    # Unquoted, self names a host called "self": the app's own pages could no longer frame it (helper-101).
    (["--frame-ancestors", "self"], "'self' is no source: write 'self' and 'none' with their quotes"),
    (["--frame-ancestors", "'self'\r\nX-Evil: 1"], "is not a frame-ancestors source list"),  # helper-100
    # A query is no part of a CSP source: browsers drop it, and the Space could not frame the app (helper-103).
    (["--frame-ancestors", "https://huggingface.co/spaces/x?a=b"], "is no source"),
    (["--frame-ancestors", "'self' https://a.example:99999"], "is no source"),  # no such port (helper-105)
    (["--frame-ancestors", "'self' https://a.example:0"], "is no source"),  # port 0 (helper-136)
    # "--forwarded-allow-ips $PROXY_IP" with the variable unset trusted no proxy, silently (helper-103).
    (["--forwarded-allow-ips="], "--forwarded-allow-ips '' has an empty entry"),
    (["--forwarded-allow-ips", "127.0.0.1, ,10.0.0.1"], "has an empty entry"),
    (["--allowed-host="], "--allowed-host is given an empty name"),
    # Any existing file was appended to: --gpu-log /etc/passwd added a line a second (helper-145).
    (["--gpu-log", "{tmp}/a_file"], "--gpu-log '{tmp}/a_file': is a file that holds something else, not a GPU log"),
    (["--ledger", "{tmp}/a_file"], "--ledger '{tmp}/a_file': is a file that holds something else, not a ledger"),
    # A file that breaks JSON decoding raised a bare RecursionError (helper-151).
    (["--ledger", "{tmp}/deep.json"], "--ledger '{tmp}/deep.json': is a file that holds something else, not a ledger"),
    # The file the GPU log's rotation renames over (helper-147).
    (["--gpu-log", "{tmp}/gpu.log"], "--gpu-log '{tmp}/gpu.log': its rotation would replace '{tmp}/gpu.log.1', which is a "
                                     "file that holds something else"),
])
def test_bad_flag_is_named(argv, fragment, tmp_path, capsys):
    (tmp_path / "a_file").write_text("a file where a folder of a path is meant")
    (tmp_path / "gpu.log.1").write_text("my notes")
    (tmp_path / "deep.json").write_text("[" * 70_000)
    with pytest.raises(SystemExit) as e:
        parse_settings([a.format(tmp=tmp_path) for a in argv])
    assert e.value.code == 2
    assert fragment.format(tmp=tmp_path) in capsys.readouterr().err
    assert (tmp_path / "a_file").read_text() == "a file where a folder of a path is meant"  # left as it was
    assert (tmp_path / "gpu.log.1").read_text() == "my notes"


@pytest.mark.parametrize("variable,value,fragment", [
    ("COSYVOICE_UI_PORT", "abc", "COSYVOICE_UI_PORT='abc' (the variable for --port): 'abc' is not a port number"),
    ("COSYVOICE_UI_STREAM", "maybe", "COSYVOICE_UI_STREAM='maybe' (the variable for --stream): use 1/0"),
    ("COSYVOICE_UI_MAX_QUEUE", "1.5", "COSYVOICE_UI_MAX_QUEUE='1.5' (the variable for --max-queue)"),
    ("COSYVOICE_UI_REQUEST_TIMEOUT", "inf", "COSYVOICE_UI_REQUEST_TIMEOUT='inf'"),
])
def test_bad_variable_is_named(variable, value, fragment, monkeypatch, capsys):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit):
        parse_settings([])
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("variable,value,fragment", [
    ("COSYVOICE_UI_MAX_QUEUE", "1001", "COSYVOICE_UI_MAX_QUEUE='1001' (the variable for --max-queue): --max-queue 1001 is over"),
    ("COSYVOICE_UI_MAX_QUEUE", "0", "COSYVOICE_UI_MAX_QUEUE='0' (the variable for --max-queue): --max-queue must be at least 1"),
    ("COSYVOICE_UI_REQUEST_TIMEOUT", "9999999",
     "COSYVOICE_UI_REQUEST_TIMEOUT='9999999' (the variable for --request-timeout): --request-timeout 9999999 s is longer"),
])
def test_out_of_range_variable_is_named(variable, value, fragment, monkeypatch, capsys):
    """A value out of range names the variable that set it, as a malformed one does (it named
    only the flag, which the user never typed)."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit):
        parse_settings([])
    assert fragment in capsys.readouterr().err


def test_the_flag_wins_and_is_named_over_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("COSYVOICE_UI_MAX_QUEUE", "5")
    with pytest.raises(SystemExit):
        parse_settings(["--max-queue", "1001"])
    err = capsys.readouterr().err
    assert "--max-queue 1001 is over" in err and "COSYVOICE_UI_MAX_QUEUE" not in err, err


@pytest.mark.parametrize("variable,value,argv,name", [
    ("COSYVOICE_UI_IDLE_UNLOAD_AFTER", "600", ["--idle-unload-after", "off"], "idle_unload_after_s"),
    ("COSYVOICE_UI_IDLE_UNLOAD_AFTER", "600", ["--idle-unload-after", "0"], "idle_unload_after_s"),
    ("COSYVOICE_UI_LEDGER", "{tmp}/ledger.jsonl", ["--ledger", "off"], "ledger"),
    ("COSYVOICE_UI_GPU_LOG", "{tmp}/gpu.log", ["--gpu-log", "OFF"], "gpu_log"),
    # The other words a switch takes for "off" made files named "no" or "0" (twenty-third).
    ("COSYVOICE_UI_GPU_LOG", "{tmp}/gpu.log", ["--gpu-log", "no"], "gpu_log"),
    ("COSYVOICE_UI_LEDGER", "{tmp}/ledger.jsonl", ["--ledger", "0"], "ledger"),
    ("COSYVOICE_UI_LEDGER", "{tmp}/ledger.jsonl", ["--ledger", "false"], "ledger"),
    ("COSYVOICE_UI_IDLE_UNLOAD_AFTER", "600", ["--idle-unload-after", "no"], "idle_unload_after_s"),
    ("COSYVOICE_UI_RETRY_FAILED_LOAD_AFTER", "300", ["--retry-failed-load-after", "off"], "retry_failed_load_after_s"),
])
def test_a_flag_turns_off_what_a_variable_turned_on(variable, value, argv, name, tmp_path, monkeypatch, capsys):
    """A service file's variable could not be undone for one run: ``--idle-unload-after off`` was
    refused with argparse's "invalid _finite_float value" (twenty-second newcomer session)."""
    monkeypatch.setenv(variable, value.format(tmp=tmp_path))
    monkeypatch.chdir(tmp_path)  # a word taken for a file name would be created here
    assert getattr(parse_settings([]), name) is not None
    assert getattr(parse_settings(argv), name) is None
    assert "_float" not in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["gpu.log"], ["ledger.jsonl"])


def test_a_malformed_number_names_no_internal_function(capsys):
    with pytest.raises(SystemExit):
        parse_settings(["--request-timeout", "ten"])
    err = capsys.readouterr().err
    assert "--request-timeout: 'ten' is not a number" in err and "_finite_float" not in err, err


def test_variables_are_read_and_flags_win(monkeypatch):
    monkeypatch.setenv("COSYVOICE_UI_MAX_QUEUE", "3")
    monkeypatch.setenv("COSYVOICE_UI_STREAM", "yes")
    assert parse_settings([]).max_queue == 3 and parse_settings([]).stream is True
    assert parse_settings(["--max-queue", "5"]).max_queue == 5


@pytest.mark.parametrize("variable", ["COSYVOICE_UI_STREAM", "COSYVOICE_UI_GPU_LOG", "COSYVOICE_UI_AUTH",
                                      "COSYVOICE_UI_HOST", "COSYVOICE_UI_MAX_QUEUE"])
@pytest.mark.parametrize("value", ["", "  "])
def test_empty_variable_is_refused(variable, value, monkeypatch, capsys):
    """An empty variable is refused alike for every setting (a switch or a path took it as "off",
    the host refused it); read as unset, COSYVOICE_UI_AUTH=$UNDEFINED would serve with no password."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as e:
        parse_settings([])
    assert e.value.code == 2
    assert f"{variable} is set but empty" in capsys.readouterr().err


@pytest.mark.parametrize("variable,value", [("COSYVOICE_UI_AUTH", "admin=hunter2"), ("COSYVOICE_UI_AUTH", ":hunter2")])
def test_a_malformed_secret_is_named_but_not_shown(variable, value, monkeypatch, capsys):
    """The refusal echoed the whole value, so a mistyped password landed in the log."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit):
        parse_settings([])
    err = capsys.readouterr().err
    assert f"{variable}=<{len(value)} characters, not shown> (the variable for --auth)" in err, err
    assert "hunter2" not in err


def test_the_test_suites_variable_is_no_typo(monkeypatch, capsys):
    """COSYVOICE_UI_PROMPTS (the README's Tests section) is read by the tests, not the app."""
    monkeypatch.setenv("COSYVOICE_UI_PROMPTS", "/somewhere/prompts")
    parse_settings([])
    assert "COSYVOICE_UI_PROMPTS" not in capsys.readouterr().err


def test_misspelled_variable_is_warned_about(monkeypatch, capsys):
    monkeypatch.setenv("COSYVOICE_UI_MAXQUEUE", "3")
    settings = parse_settings([])
    err = capsys.readouterr().err
    assert "COSYVOICE_UI_MAXQUEUE is not a setting" in err and "COSYVOICE_UI_MAX_QUEUE" in err
    assert settings.max_queue == 16


def _run_app(*flags) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), *flags], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


@pytest.mark.parametrize("argv, fragment", [
    (["--max-segment-chars", "5"], "choppy"),
    (["--max-segment-chars", "5000"], "no longer bounds"),
])
def test_segment_length_that_defeats_splitting_is_warned_about(argv, fragment, capsys):
    parse_settings(argv)
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("argv, fragment", [
    (["--request-timeout", "1e-9"], "--request-timeout 1e-09 s: a request that runs longer fails"),
    (["--request-timeout", "1"], "Use 5 s or more"),
    # Every upload was refused (413, "at most 0 bytes") with no word at start (helper-131).
    (["--max-upload-mb", "0.0000001"], "--max-upload-mb 1e-07: uploads over 0 bytes are refused"),
    (["--max-upload-mb", "0.5"], "use 1 or more (default 20)"),
    (["--leak-threshold-mb", "0", "--leak-threshold-fraction", "0"], "the worker may be restarted after ordinary requests"),
    # Near zero does the same (twentieth newcomer session).
    (["--leak-threshold-mb", "0.001", "--leak-threshold-fraction", "0"], "the worker may be restarted after ordinary requests"),
    (["--leak-threshold-mb", "0", "--leak-threshold-fraction", "1e-9"], "the worker may be restarted after ordinary requests"),
    (["--memory-reserve", "0.999"], "most requests will be refused"),
    (["--temp-file-ttl", "1"], "a page played (or a result downloaded) a little later finds them gone"),
    (["--idle-unload-after", "1"], "the next one waits for it to load again"),
    (["--retry-failed-load-after", "5"], "is loaded again this often, three tries each time"),
    (["--max-per-client", "20"], "--max-per-client 20 is more than --max-queue 16: one client can then take every place"),
    (["--gpu-log-max-mb", "5"], "--gpu-log-max-mb 5 has no effect without --gpu-log PATH"),
    (["--gpu-log", "{tmp}/gpu.log", "--gpu-log-max-mb", "0.01"], "each GPU log file holds about 1.6 minutes"),
    # ... at the rate it is written (twenty-fourth newcomer session: 1.6 minutes said for 10 s).
    (["--gpu-log", "{tmp}/gpu.log", "--gpu-log-max-mb", "0.01", "--monitor-interval", "0.1"],
     "holds about 0.16 minutes of samples at one every 0.1 s"),
])
def test_limits_that_defeat_themselves_are_warned_about(argv, fragment, capsys, tmp_path):
    """A newcomer ran --request-timeout 1 (the first request failed, the worker restarted) and zero
    leak thresholds (a leak restart after 5 requests over 4 KB of growth) without a word."""
    argv = [a.format(tmp=tmp_path) for a in argv]
    parse_settings(argv)
    assert fragment in capsys.readouterr().err
    sensible = {"--leak-threshold-mb": [*argv, "--no-restart-on-leak"], "--memory-reserve": ["--memory-reserve", "0.9"],
                "--temp-file-ttl": ["--temp-file-ttl", "60"], "--idle-unload-after": ["--idle-unload-after", "30"],
                "--retry-failed-load-after": ["--retry-failed-load-after", "60"],
                "--request-timeout": ["--request-timeout", "5"], "--max-upload-mb": ["--max-upload-mb", "1"],
                "--max-per-client": ["--max-per-client", "16"], "--gpu-log-max-mb": ["--gpu-log-max-mb", "100"],
                "--gpu-log": [*argv[:2], "--gpu-log-max-mb", "1"]}[argv[0]]
    parse_settings(sensible)
    assert capsys.readouterr().err == ""


def test_a_warning_names_the_variable_that_set_the_value(monkeypatch, capsys):
    """"--gpu-log-max-mb 3 has no effect" when COSYVOICE_UI_GPU_LOG_MAX_MB=3 was set sent the user
    looking for a flag they never typed (twenty-fourth newcomer session); errors named it already."""
    monkeypatch.setenv("COSYVOICE_UI_GPU_LOG_MAX_MB", "3")
    monkeypatch.setenv("COSYVOICE_UI_REQUEST_TIMEOUT", "2")
    parse_settings([])
    err = capsys.readouterr().err
    assert "COSYVOICE_UI_GPU_LOG_MAX_MB='3' (the variable for --gpu-log-max-mb): --gpu-log-max-mb 3 has no" in err, err
    assert "COSYVOICE_UI_REQUEST_TIMEOUT='2' (the variable for --request-timeout)" in err, err
    parse_settings(["--request-timeout", "2", "--gpu-log-max-mb", "3"])  # typed: named as typed
    err = capsys.readouterr().err
    assert "warning: --request-timeout 2 s" in err and "COSYVOICE_UI" not in err, err


def test_cosyvoice_flags_with_another_engine_are_warned_about(monkeypatch, capsys):
    parse_settings(["--load-trt", "--model-dir", "/tmp"])
    assert "--load-trt, --model-dir only apply to --engine cosyvoice" in capsys.readouterr().err
    monkeypatch.setenv("COSYVOICE_UI_LOAD_TRT", "1")
    parse_settings([])
    assert "COSYVOICE_UI_LOAD_TRT only applies to --engine cosyvoice; with --engine embedded it is ignored" \
        in capsys.readouterr().err


def test_every_flag_has_help():
    from cosyvoice_ui.settings import build_parser

    missing = [a.option_strings[0] for a in build_parser()._actions
               if a.help is None and not a.option_strings[0].startswith("--no-")]
    assert not missing, f"flags without help text in --help: {missing}"


def test_default_settings_warn_about_nothing(monkeypatch, capsys):
    for variable in [v for v in os.environ if v.startswith("COSYVOICE_UI_")]:
        monkeypatch.delenv(variable)
    parse_settings([])
    assert capsys.readouterr().err == ""


def test_too_short_start_timeout_names_the_flag():
    code, out, _ = _run_app("--port", str(free_port()), "--worker-start-timeout", "0.3")
    assert code == 2 and "within 0.3 s (--worker-start-timeout" in out, out[-2000:]


def test_port_in_use_is_refused_before_the_model_loads(tmp_path):
    ledger, gpu_log = tmp_path / "ledger.jsonl", tmp_path / "gpu.log"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, out, _ = _run_app("--port", str(taken.getsockname()[1]), "--ledger", str(ledger),
                                "--gpu-log", str(gpu_log))
    assert code == 2, out
    assert "cannot listen on 127.0.0.1:" in out and "Choose a free --port" in out, out
    assert "worker started" not in out and "ready: open" not in out, out
    # The files' writability was checked, but a failed start leaves no empty files behind
    # (forty-fourth newcomer session).
    assert not ledger.exists() and not gpu_log.exists()


def test_unknown_host_is_refused_before_the_model_loads():
    code, out, _ = _run_app("--host", "999.1.1.1", "--port", str(free_port()))
    assert code == 2 and "--host '999.1.1.1' is not an address" in out, out
    assert "worker started" not in out and "reachable from the network" not in out, out


def test_address_of_another_machine_is_refused_with_the_right_advice():
    # 192.0.2.1: TEST-NET-1 (RFC 5737), on no machine's interfaces.
    code, out, _ = _run_app("--host", "192.0.2.1", "--port", str(free_port()))
    assert code == 2 and "this machine has no such address" in out and "another copy" not in out, out


def test_a_gradio_temp_dir_holding_other_files_is_refused(tmp_path):
    """GRADIO_TEMP_DIR set to a folder other programs use (Gradio's /tmp/gradio): another Gradio
    app's upload was served to anyone, any file there was taken as a prompt by its path and then
    deleted (helper-150). A folder that holds something and no lock file of this app is refused at
    start, untouched."""
    shared = tmp_path / "gradio"
    (shared / ("b" * 64)).mkdir(parents=True)
    (shared / ("b" * 64) / "other_apps_upload.wav").write_bytes(b"RIFF")
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "--port", str(free_port())], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "GRADIO_TEMP_DIR": str(shared)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and f"GRADIO_TEMP_DIR='{shared}' holds '{'b' * 64}', which this app did not make" in out, \
        out[-2000:]
    assert "worker started" not in out and sorted(p.name for p in shared.rglob("*")) == ["b" * 64, "other_apps_upload.wav"]


@pytest.mark.parametrize("temp", ["{file}", "/proc/no-such-folder"])
def test_unusable_gradio_temp_dir_is_refused_before_the_model_loads(temp, tmp_path):
    """A file (or an uncreatable path) as GRADIO_TEMP_DIR made Gradio raise after the model had
    loaded, and the process stayed up for good, holding the model and serving nothing."""
    file = tmp_path / "a_file"
    file.write_text("not a folder")
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "--port", str(free_port())], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "GRADIO_TEMP_DIR": temp.format(file=file)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "GRADIO_TEMP_DIR=" in out and "point it at a writable folder" in out, out[-2000:]
    assert "worker started" not in out, out[-2000:]


@pytest.mark.parametrize("plant", ["symbolic link", "hard link", "fifo"])
def test_something_planted_at_the_lock_files_path_is_named_at_the_start(plant, tmp_path):
    """A link or FIFO at the temporary folder's lock path stopped the start with "point it at a
    writable folder", about a folder that was writable (helper-129): the message names the path
    and what is there, and says to remove it; the file a link names is left as it was."""
    folder = tmp_path / "temp"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious content")
    lock = folder / ".cosyvoice_ui.lock"
    {"symbolic link": lambda: lock.symlink_to(victim), "hard link": lambda: os.link(victim, lock),
     "fifo": lambda: os.mkfifo(lock)}[plant]()
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "--port", str(free_port())], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "GRADIO_TEMP_DIR": str(folder)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and str(lock) in out and "Remove it" in out, out[-2000:]
    assert {"symbolic link": "symbolic link", "hard link": "hard link", "fifo": "FIFO"}[plant] in out, out[-2000:]
    assert "worker started" not in out and victim.read_text() == "precious content", out[-2000:]


def test_the_allowed_hosts_variable_is_named_with_its_flag(monkeypatch, capsys):
    """An empty COSYVOICE_UI_ALLOWED_HOSTS was called "the variable for --allowed-hosts", a flag that
    does not exist (helper-53)."""
    monkeypatch.setenv("COSYVOICE_UI_ALLOWED_HOSTS", "")
    with pytest.raises(SystemExit):
        parse_settings([])
    assert "(the variable for --allowed-host)" in capsys.readouterr().err


def test_frame_ancestors_that_let_any_page_frame_the_app_are_warned_about(capsys):
    """--frame-ancestors '*' brings back the clickjacking of Restart (helper-99): allowed, with a
    warning that says so and what to give instead (helper-101)."""
    assert parse_settings(["--frame-ancestors", "'self'  https://huggingface.co"]).frame_ancestors == \
        "'self' https://huggingface.co"
    assert "lets pages at any address" not in capsys.readouterr().err
    for sources in ("*", "'self' https://*", "*:*", "'self' *.com", "'self' data:"):  # https://* was refused as no source (helper-102)
        assert parse_settings(["--frame-ancestors", sources]).frame_ancestors == sources
        assert "lets pages at any address show the app in a frame" in capsys.readouterr().err, sources


def test_a_forwarded_allow_ips_of_anyone_is_warned_about(capsys):
    """--forwarded-allow-ips * lets every client name its own address (helper-102, helper-103)."""
    for value in ("*", "0.0.0.0/0", "127.0.0.1,::/0"):
        parse_settings(["--forwarded-allow-ips", value])
        assert "takes X-Forwarded-For from any client" in capsys.readouterr().err, value
    parse_settings(["--forwarded-allow-ips", "127.0.0.1"])
    assert "any client" not in capsys.readouterr().err


def test_hard_links_to_one_file_for_the_gpu_log_and_the_ledger_are_refused(tmp_path, capsys):
    """Two hard links to one empty file passed the check of the two paths: the GPU log wrote into
    the ledger every second and every record of that run was lost (helper-150)."""
    (tmp_path / "ledger.jsonl").write_bytes(b"")
    os.link(tmp_path / "ledger.jsonl", tmp_path / "gpu.log")
    with pytest.raises(SystemExit):
        parse_settings(["--ledger", str(tmp_path / "ledger.jsonl"), "--gpu-log", str(tmp_path / "gpu.log")])
    assert "--gpu-log and --ledger name the same file" in capsys.readouterr().err


def test_a_fifo_at_the_gpu_logs_rotation_path_is_refused_at_once(tmp_path, capsys):
    """The start read PATH.1 to check it, and a FIFO there made that read wait for a writer for
    good: the start hung with no word (helper-152)."""
    os.mkfifo(tmp_path / "gpu.log.1")
    with pytest.raises(SystemExit):
        parse_settings(["--gpu-log", str(tmp_path / "gpu.log")])
    assert "its rotation would replace" in capsys.readouterr().err


def test_a_gradio_temp_dir_of_its_own_file_system_is_taken(tmp_path):
    """A folder that is a file system of its own, made for the app, holds lost+found: it was
    refused as another program's (helper-152)."""
    sys.path.insert(0, str(ROOT))
    try:
        import app
    finally:
        sys.path.remove(str(ROOT))
    (tmp_path / "lost+found").mkdir()
    assert app._foreign_entry(str(tmp_path)) is None
    (tmp_path / "notes.txt").write_text("another program's")
    assert app._foreign_entry(str(tmp_path)) == "notes.txt"


def test_the_ledger_and_gpu_log_of_an_earlier_run_are_taken_again(tmp_path):
    """The files the app writes are recognized (others are refused: test_bad_flag_is_named), also
    a ledger whose first line a crash cut short, a GPU log's rotated file, and an empty file:
    logrotate's create and copytruncate leave the app's own files empty, and refusing those stopped
    the next start (helper-149)."""
    from cosyvoice_ui.monitor.gpu_log import GpuLog
    from cosyvoice_ui.monitor.ledger import Ledger
    from cosyvoice_ui.monitor.sampler import _DMON_HEADER, Sample, format_dmon_line

    ledger = tmp_path / "ledger.jsonl"
    Ledger(path=str(ledger)).add_event("embedded", "cpu", "refused:input", "an empty text")
    gpu_log = tmp_path / "gpu.log"
    log = GpuLog(str(gpu_log), 2**20, _DMON_HEADER)
    log.write("20261203 15:00:00    0   1000  80000      5      3     60     40   1234   900    700     650   800    600\n")
    log.close()
    settings = parse_settings(["--ledger", str(ledger), "--gpu-log", str(gpu_log)])
    assert (settings.ledger, settings.gpu_log) == (str(ledger), str(gpu_log))
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b'{"time_s": 17963, "outc' + b"\n" + ledger.read_bytes())
    (tmp_path / "gpu.log.1").write_bytes(gpu_log.read_bytes())
    assert parse_settings(["--ledger", str(cut), "--gpu-log", str(gpu_log)]).ledger == str(cut)
    # logrotate's copytruncate empties the log in place; the samples after it came with no column
    # names, and the next start refused the file (helper-151). The header is written again.
    log = GpuLog(str(gpu_log), 2**20, _DMON_HEADER)
    sample = format_dmon_line(Sample(time.time(), (), 1234, None, 700 * 2**20, None, None, 600 * 2**20, "ready"))
    log.write(sample)
    with open(gpu_log, "r+") as f:
        f.truncate(0)
    log.write(sample)
    log.close()
    assert gpu_log.read_text() == _DMON_HEADER + sample
    # And a log that starts with a sample line (emptied between the check and a write) is its own.
    gpu_log.write_text(sample)
    assert parse_settings(["--gpu-log", str(gpu_log)]).gpu_log == str(gpu_log)
    (tmp_path / "emptied.jsonl").write_bytes(b"")
    (tmp_path / "emptied.log").write_bytes(b"")
    assert parse_settings(["--ledger", str(tmp_path / "emptied.jsonl"), "--gpu-log", str(tmp_path / "emptied.log")])
