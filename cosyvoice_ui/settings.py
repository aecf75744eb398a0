"""Every knob of the application in one typed place.

Each setting is a command-line flag and, where that is handy for services, an environment
variable ``COSYVOICE_UI_<NAME>`` (flag wins over variable, variable over default). Nothing
else in the package reads ``sys.argv`` or ``os.environ`` for configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import math
import os
import re
import sys
from typing import Sequence

ENV_PREFIX = "COSYVOICE_UI_"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Validated configuration of one running application.

    Units are in the names: ``_s`` seconds, ``_mb`` MiB (2**20 bytes, as Gradio counts its
    "MB" and shows the upload limit in the page), ``_chars`` Unicode code points.
    """

    host: str = "127.0.0.1"
    port: int = 7860
    engine: str = "embedded"
    device: str = "auto"  # auto | cpu | cuda | cuda:N, resolved inside the worker only
    fp16: bool = True  # used on CUDA by engines that support it
    max_text_chars: int = 2000
    max_segment_chars: int = 200
    max_queue: int = 16
    max_per_client: int | None = None  # requests one client may have waiting or running; None: half of max_queue
    request_timeout_s: float = 120.0
    restart_grace_s: float = 30.0  # how long Restart lets an in-flight request finish
    restart_cooldown_s: float = 30.0  # a user restart this soon after the last one ended is refused
    worker_start_timeout_s: float = 180.0
    heartbeat_interval_s: float = 0.5
    monitor_interval_s: float = 1.0
    monitor_history_s: float = 600.0
    gpu_log: str | None = None
    gpu_log_max_mb: float = 100.0  # rotated at this size; one older file (PATH.1) is kept
    ledger: str | None = None
    idle_unload_after_s: float | None = None
    retry_failed_load_after_s: float | None = None  # off: a failed load waits for Restart
    leak_threshold_mb: float = 200.0
    leak_threshold_fraction: float = 0.05
    leak_window: int = 10
    restart_on_leak: bool = True
    memory_reserve: float = 0.10
    auth: str | None = None  # "user:password"
    allowed_hosts: tuple[str, ...] = ()  # host names answered besides loopback ones, when serving on loopback
    forwarded_allow_ips: tuple[str, ...] = ()  # proxies whose X-Forwarded-For/-Proto are taken; none by default
    frame_ancestors: str = "'self'"  # CSP frame-ancestors: the pages that may show the app in a frame
    metrics_token: str | None = None
    max_upload_mb: float = 20.0
    temp_reserve_mb: float | None = None  # uploads leaving less free in the temp folder are refused; None: 2 x upload, >= 64
    read_timeout_s: float = 30.0  # a client's request head must arrive, and its body may pause, this long
    temp_file_ttl_s: float = 3600.0  # uploads and results are deleted this long after they were written
    # CosyVoice engine (--engine cosyvoice)
    model_dir: str | None = None
    cosyvoice_repo: str | None = None
    load_trt: bool = False
    load_vllm: bool = False
    stream: bool = False
    empty_cache_after_request: bool = False

    @property
    def engine_options(self) -> dict:
        """Constructor arguments of the engine class (only the CosyVoice engine takes any)."""
        if self.engine != "cosyvoice":
            return {}
        return {"model_dir": self.model_dir, "repo": self.cosyvoice_repo, "load_trt": self.load_trt,
                "load_vllm": self.load_vllm}

    @property
    def temp_file_check_s(self) -> int:
        """How often expired temporary files are looked for: a sixth of the time-to-live, at most 10 min."""
        return max(1, min(600, int(self.temp_file_ttl_s // 6)))

    @property
    def per_client_limit(self) -> int | None:
        """Requests one client may have waiting or running at once (``--max-per-client``; by
        default half of ``--max-queue``, at least 1), or ``None`` for no limit (0)."""
        if self.max_per_client is None:
            return max(1, self.max_queue // 2)
        return self.max_per_client or None

    @property
    def temp_reserve_bytes(self) -> int:
        """Free space kept in the temporary folder (``--temp-reserve-mb``; by default twice
        ``--max-upload-mb``, at least 64 MiB): uploads that would leave less are refused."""
        mb = max(64.0, 2 * self.max_upload_mb) if self.temp_reserve_mb is None else self.temp_reserve_mb
        return int(mb * 2**20)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 2**20)


_DEVICE_RE = re.compile(r"^(auto|cpu|cuda|cuda:\d+)$")


_ENV_CHECKS: dict[str, tuple[str, object]] = {}  # variable -> (its flag, a converter that raises on bad values)


def _env(name: str, default, check=str, flag: str | None = None):
    """The value of ``COSYVOICE_UI_<NAME>`` as a string (argparse converts it like a typed flag),
    or ``default``. ``check`` is run on it by :func:`parse_settings`, whose error then names the
    variable rather than the flag the user never typed; ``flag`` where the flag's name is not the
    variable's (``COSYVOICE_UI_ALLOWED_HOSTS`` for ``--allowed-host``)."""
    variable = ENV_PREFIX + name.upper()
    _ENV_CHECKS[variable] = (flag or "--" + name.replace("_", "-"), check)
    value = os.environ.get(variable)
    return default if value is None else value


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of ``app.py`` (and ``./run.sh``, which passes flags on)."""
    d = Settings()
    p = argparse.ArgumentParser(
        prog="app.py", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Voice-cloning text-to-speech in the browser, with the model in a supervised worker process.",
    )
    p.add_argument("--host", default=_env("host", d.host),
                   help="address to serve on (default 127.0.0.1: this machine only; 0.0.0.0 exposes it to the network)")
    hosts_from_env = _env("allowed_hosts", None, flag="--allowed-host")
    p.add_argument("--allowed-host", dest="allowed_hosts", action="append", metavar="NAME",
                   default=None if hosts_from_env is None else hosts_from_env.split(","),
                   help="with --host a loopback address, a host name the app answers to besides localhost, 127.0.0.1 "
                        "and [::1] (a reverse proxy that passes its own name); repeat for more, or set "
                        "COSYVOICE_UI_ALLOWED_HOSTS to names separated by commas")
    p.add_argument("--forwarded-allow-ips", default=_env("forwarded_allow_ips", None), metavar="ADDRESSES",
                   help="addresses or networks of reverse proxies, separated by commas (127.0.0.1 for one on this "
                        "machine; * for any), whose X-Forwarded-For and X-Forwarded-Proto are taken as the client's "
                        "address and scheme; from others, and by default, these headers are ignored, as anyone "
                        "can send them")
    p.add_argument("--frame-ancestors", default=_env("frame_ancestors", d.frame_ancestors), metavar="SOURCES",
                   help="pages that may show the app in a frame, as a Content-Security-Policy frame-ancestors "
                        "source list: 'self' (the app's own pages), or add the embedding site, such as "
                        "\"'self' https://huggingface.co\" for a Hugging Face Space")
    p.add_argument("--port", type=_port, default=_env("port", d.port, check=_port), help="TCP port to serve on")
    p.add_argument("--engine", default=_env("engine", d.engine),
                   help="synthesis engine: embedded (Piper + WORLD; PyTorch on CUDA, ONNX Runtime on the CPU), "
                        "embedded-torch, embedded-onnx, or module:Class")
    p.add_argument("--device", default=_env("device", d.device),
                   help="auto | cpu | cuda | cuda:N (auto picks cuda:0 when the worker sees a GPU)")
    p.add_argument("--fp16", dest="fp16", action="store_true", default=_bool(_env("fp16", d.fp16, check=_strict_bool)),
                   help="half precision on CUDA where the engine supports it (default on)")
    p.add_argument("--no-fp16", dest="fp16", action="store_false")
    p.add_argument("--max-text-chars", type=int, default=_env("max_text_chars", d.max_text_chars, check=int),
                   help="longest text accepted, in characters")
    p.add_argument("--max-segment-chars", type=int, default=_env("max_segment_chars", d.max_segment_chars, check=int),
                   help="longer texts are split at sentence and clause boundaries into segments of at most this")
    p.add_argument("--max-queue", type=int, default=_env("max_queue", d.max_queue, check=int),
                   help="requests waiting for the worker before new ones get an immediate 'busy' answer")
    p.add_argument("--max-per-client", type=int, default=_env("max_per_client", d.max_per_client, check=int),
                   help="requests one client (a browser tab, a gradio_client.Client) may have waiting or running; "
                        "default half of --max-queue; 0 = no limit")
    p.add_argument("--request-timeout", dest="request_timeout_s", type=_finite_float,
                   default=_env("request_timeout", d.request_timeout_s, check=_finite_float),
                   help="seconds a request may run in the worker before the worker is restarted")
    p.add_argument("--restart-grace", dest="restart_grace_s", type=_finite_float,
                   default=_env("restart_grace", d.restart_grace_s, check=_finite_float),
                   help="seconds Restart waits for an in-flight request before killing the worker")
    p.add_argument("--restart-cooldown", dest="restart_cooldown_s", type=_finite_float,
                   default=_env("restart_cooldown", d.restart_cooldown_s, check=_finite_float),
                   help="seconds after a restart during which Restart (page or API) is refused; presses while "
                        "one is under way join it. Anyone who can open the page can press Restart: use --auth "
                        "on a public server")
    p.add_argument("--worker-start-timeout", dest="worker_start_timeout_s", type=_finite_float,
                   default=_env("worker_start_timeout", d.worker_start_timeout_s, check=_finite_float),
                   help="seconds a worker may take to load its model before it is replaced (raise it for a "
                        "first TensorRT build or a slow disk)")
    p.add_argument("--monitor-interval", dest="monitor_interval_s", type=_finite_float,
                   default=_env("monitor_interval", d.monitor_interval_s, check=_finite_float),
                   help="seconds between memory samples (NVML, psutil) for the page, /metrics and --gpu-log")
    p.add_argument("--gpu-log", type=_path_or_off, default=_env("gpu_log", d.gpu_log),
                   help="append memory samples to this file in nvidia-smi dmon style (off: none)")
    p.add_argument("--gpu-log-max-mb", type=_finite_float,
                   default=_env("gpu_log_max_mb", d.gpu_log_max_mb, check=_finite_float),
                   help="--gpu-log is rotated at this size in MiB; the previous file is kept as PATH.1")
    p.add_argument("--ledger", type=_path_or_off, default=_env("ledger", d.ledger),
                   help="append one JSON line per finished request (time, lengths, RTF, peak memory, outcome) to "
                        "this file (off: none)")
    p.add_argument("--idle-unload-after", dest="idle_unload_after_s", type=_seconds_or_off,
                   default=_env("idle_unload_after", d.idle_unload_after_s, check=_seconds_or_off),
                   help="end the worker after this many seconds without requests (frees the GPU); off (or 0) keeps "
                        "the model loaded (default)")
    p.add_argument("--retry-failed-load-after", dest="retry_failed_load_after_s", type=_seconds_or_off,
                   default=_env("retry_failed_load_after", d.retry_failed_load_after_s, check=_seconds_or_off),
                   help="when the model could not be loaded (3 tries), try again after this many seconds, and again "
                        "after each failure (an unattended page heals once the GPU memory is back); off (default) "
                        "waits for Restart")
    p.add_argument("--leak-threshold-mb", type=_finite_float, default=_env("leak_threshold_mb", d.leak_threshold_mb, check=_finite_float),
                   help="leak watchdog: growth of after-request memory over the baseline that counts as a leak "
                        "(the larger of this and --leak-threshold-fraction of the baseline)")
    p.add_argument("--leak-threshold-fraction", type=_finite_float,
                   default=_env("leak_threshold_fraction", d.leak_threshold_fraction, check=_finite_float),
                   help="leak watchdog: growth as a fraction of the baseline that counts as a leak (see "
                        "--leak-threshold-mb)")
    p.add_argument("--leak-window", type=int, default=_env("leak_window", d.leak_window, check=int),
                   help="leak watchdog: requests whose median after-request memory is compared with the baseline")
    p.add_argument("--restart-on-leak", dest="restart_on_leak", action="store_true",
                   default=_bool(_env("restart_on_leak", d.restart_on_leak, check=_strict_bool)),
                   help="restart a leaking worker between requests (default on)")
    p.add_argument("--no-restart-on-leak", dest="restart_on_leak", action="store_false")
    p.add_argument("--memory-reserve", type=_finite_float, default=_env("memory_reserve", d.memory_reserve, check=_finite_float),
                   help="fraction of the device's memory that admission keeps free (default 0.10)")
    p.add_argument("--auth", default=_env("auth", d.auth),
                   help="USER:PASSWORD required for the page and every API call (or set COSYVOICE_UI_AUTH)")
    p.add_argument("--metrics-token", default=_env("metrics_token", d.metrics_token),
                   help="bearer token required for /metrics and /healthz (open when not set)")
    p.add_argument("--max-upload-mb", type=_finite_float, default=_env("max_upload_mb", d.max_upload_mb, check=_finite_float),
                   help="largest prompt audio file accepted, in MiB (Gradio refuses larger uploads)")
    p.add_argument("--temp-reserve-mb", type=_finite_float,
                   default=_env("temp_reserve_mb", d.temp_reserve_mb, check=_finite_float),
                   help="MiB kept free in the temporary folder: uploads that would leave less are refused with 507 "
                        "(default twice --max-upload-mb, at least 64)")
    p.add_argument("--read-timeout", dest="read_timeout_s", type=_finite_float,
                   default=_env("read_timeout", d.read_timeout_s, check=_finite_float),
                   help="seconds a client may take to send a request's headers, or pause while sending its body, "
                        "before its connection is closed")
    p.add_argument("--temp-file-ttl", dest="temp_file_ttl_s", type=_finite_float,
                   default=_env("temp_file_ttl", d.temp_file_ttl_s, check=_finite_float),
                   help="seconds after which uploaded prompts and result files are deleted")
    p.add_argument("--empty-cache-after-request", action="store_true",
                   default=_bool(_env("empty_cache_after_request", d.empty_cache_after_request, check=_strict_bool)),
                   help="torch.cuda.empty_cache() after every request (returns cached blocks to the driver; "
                        "slower next request)")
    p.add_argument("--stream", action="store_true", default=_bool(_env("stream", d.stream, check=_strict_bool)),
                   help="stream audio to the browser and API as it is made (CosyVoice: the model's streaming mode)")
    cv = p.add_argument_group("CosyVoice engine (--engine cosyvoice)")
    cv.add_argument("--model-dir", default=_env("model_dir", d.model_dir),
                    help="local folder of a CosyVoice 2 or 3 model (never downloaded by the app)")
    cv.add_argument("--cosyvoice-repo", default=_env("cosyvoice_repo", d.cosyvoice_repo),
                    help="clone of github.com/FunAudioLLM/CosyVoice (with third_party/Matcha-TTS) to import from")
    cv.add_argument("--load-trt", action="store_true", default=_bool(_env("load_trt", d.load_trt, check=_strict_bool)),
                    help="TensorRT flow decoder (CUDA only)")
    cv.add_argument("--load-vllm", action="store_true", default=_bool(_env("load_vllm", d.load_vllm, check=_strict_bool)),
                    help="vLLM for the language model (CUDA only; takes 20%% of the card)")
    return p


def _parents(folder: str) -> list[str]:
    """``folder`` and the folders above it, the top one first."""
    out = []
    while folder and folder not in out:
        out.append(folder)
        folder = os.path.dirname(folder)
    return out[::-1]


def _not_written_by_the_app(path: str, recognize, what: str) -> str | None:
    """Why an existing file at ``path`` must not be written to: ``recognize(first_bytes)`` is False.
    None when there is no file, or an empty one: logrotate's ``create`` and ``copytruncate`` leave
    the app's own files empty, and refusing them stopped the next start (helper-149); an empty
    file holds nothing to lose."""
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        # A FIFO at the GPU log's PATH.1 made this open wait for a writer: the start hung (helper-152).
        return "is not a regular file"
    try:
        with open(path, "rb") as f:
            start = f.read(64 * 1024)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not start or recognize(start):
        return None
    # Its content is not quoted: the file may be anyone's (helper-145 appended to /etc/passwd).
    return (f"is a file that holds something else, not a {what} this app wrote; nothing was written to it. "
            f"Give a new file name, or the {what} of an earlier run")


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same path once links are resolved, or two
    hard links to one (same device and inode)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _append_problem(path: str, recognize=None, what: str = "", rotated: bool = False) -> str | None:
    """Why lines could not be appended to ``path`` for the server's lifetime, or ``None``.
    ``recognize(first_bytes)`` says whether an existing file is one the app wrote (``what``);
    ``rotated``: ``PATH.1`` must be one too, or absent."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        # A file where a folder of the path should be was "the folder does not exist" (helper-56).
        blocking = next((p for p in _parents(folder) if os.path.exists(p) and not os.path.isdir(p)), None)
        if blocking is not None:
            return f"its folder cannot exist: {os.path.basename(blocking)!r} on its way is a file, not a folder"
        return "the folder does not exist"
    if os.path.isdir(path):
        return "is a folder; give a file name inside it"
    if os.path.exists(path) and not os.path.isfile(path):
        return "is not a regular file"
    if os.path.realpath(path).startswith(("/proc/", "/sys/", "/dev/")):
        return "is a system file; give a file of your own"
    existed = os.path.exists(path)
    # The GPU log's rotation renames PATH to PATH.1 over whatever is there (helper-147).
    for name in ((path, path + ".1") if rotated else (path,)) if recognize is not None else ():
        if problem := _not_written_by_the_app(name, recognize, what):
            return problem if name == path else f"its rotation would replace {name!r}, which {problem}"
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        return f"cannot be written ({e.strerror})"
    if not existed:
        # The check leaves nothing behind: a start that failed later (a port in use) left an
        # empty ledger file (forty-fourth newcomer session). The file is made by its first line.
        os.remove(path)
    return None


def _finite_float(text) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):  # argparse's own message named this function ("invalid _finite_float value")
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


# "off" turns off an optional setting: a flag must be able to undo a COSYVOICE_UI_* variable
# (twenty-second newcomer session: COSYVOICE_UI_IDLE_UNLOAD_AFTER=10 could not be overridden). The
# other words a switch takes for "off" mean the same here; they made files named "no" or "0"
# (twenty-third).
_OFF_WORDS = {"off", "no", "false", "none", "0"}


def _seconds_or_off(text) -> float | None:
    """Seconds, or ``None`` for ``off`` (or 0, no, false, none)."""
    if text is None or str(text).strip().lower() in _OFF_WORDS:
        return None
    try:
        value = _finite_float(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e}; give seconds, or off") from None
    return None if value == 0 else value


def _path_or_off(text) -> str | None:
    """A file path, or ``None`` for ``off`` (or no, false, none, 0)."""
    if text is None or str(text).strip().lower() in _OFF_WORDS:
        return None
    if not str(text).strip():  # read as "off" before: an empty variable is refused, so is an empty flag
        raise argparse.ArgumentTypeError("empty; give a file path, or off")
    return str(text)


def _port(text) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 1-65535")
    return value


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _bool(value) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in _TRUE


def _strict_bool(text) -> bool:
    word = str(text).strip().lower()
    if word not in _TRUE | _FALSE:
        raise ValueError(f"use 1/0, true/false, yes/no or on/off, not {text!r}")
    return word in _TRUE


# Never echoed: a mistyped password would land in the log (journald, docker logs).
_SECRET_VARIABLES = {ENV_PREFIX + "AUTH", ENV_PREFIX + "METRICS_TOKEN"}
# Read by the test suite (tests/conftest.py), not by the app: no "not a setting" warning.
_OTHER_VARIABLES = {ENV_PREFIX + "PROMPTS"}


def _shown(variable: str) -> str:
    """``VARIABLE='value'`` for a message; a secret's value is replaced by its length."""
    value = os.environ.get(variable, "")
    return f"{variable}=<{len(value)} characters, not shown>" if variable in _SECRET_VARIABLES else f"{variable}={value!r}"


def _check_environment(parser: argparse.ArgumentParser) -> None:
    """Errors for malformed ``COSYVOICE_UI_*`` values naming the variable; a warning for a
    variable that is no setting (a typo would otherwise be ignored without a word)."""
    for variable, value in sorted(os.environ.items()):
        if not variable.startswith(ENV_PREFIX):
            continue
        if variable in _OTHER_VARIABLES:
            continue
        if variable not in _ENV_CHECKS:
            print(f"warning: {variable} is not a setting of this app and is ignored; the variables are "
                  f"{', '.join(sorted(_ENV_CHECKS))}", file=sys.stderr)
            continue
        flag, check = _ENV_CHECKS[variable]
        if not value.strip():
            # Refused rather than read as "unset": COSYVOICE_UI_AUTH=$UNDEFINED would otherwise
            # serve with no password without a word.
            parser.error(f"{variable} is set but empty (the variable for {flag}); give it a value or unset it "
                         f"(unset {variable})")
        try:
            check(value)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as e:
            parser.error(f"{_shown(variable)} (the variable for {flag}): {e}")


# Below this a segment is a word or two: each is synthesized alone, so the speech loses its
# prosody and every join adds a pause. Above the other, one segment's activations (which grow with
# its length) are no longer bounded by splitting. A newcomer session ran 5 and 5000 unwarned.
_SHORT_SEGMENT_CHARS = 20
_LONG_SEGMENT_CHARS = 1000


def _warn_about_segments(max_segment_chars: int, max_text_chars: int, from_env: dict[str, str]) -> None:
    if max_segment_chars < _SHORT_SEGMENT_CHARS:
        _warn(f"--max-segment-chars {max_segment_chars} splits text into a word or two per segment; "
              f"the speech will sound choppy. Use {_SHORT_SEGMENT_CHARS} or more (default 200).", from_env)
    if max_segment_chars > _LONG_SEGMENT_CHARS and max_text_chars > _LONG_SEGMENT_CHARS:
        _warn(f"--max-segment-chars {max_segment_chars}: a segment of up to "
              f"{min(max_segment_chars, max_text_chars)} characters is synthesized in one piece, so splitting no "
              "longer bounds a request's peak memory (see the README's 'Long text and memory'). "
              f"Use at most {_LONG_SEGMENT_CHARS} (default 200).", from_env)


def parse_settings(argv: Sequence[str] | None = None) -> Settings:
    """Parse flags (and ``COSYVOICE_UI_*`` variables) into :class:`Settings`.

    Raises:
        SystemExit: with argparse's message when a value is malformed or out of range.
    """
    parser = build_parser()
    _check_environment(parser)
    ns = parser.parse_args(argv)
    values = vars(ns)
    from_env = _set_by_variables(sys.argv[1:] if argv is None else list(argv))
    _name_variables_in_errors(parser, from_env)
    if not _DEVICE_RE.match(values["device"]):
        parser.error(f"--device {values['device']!r}: use auto, cpu, cuda or cuda:N (for example cuda:1)")
    for name in ("max_text_chars", "max_segment_chars", "max_queue", "leak_window"):
        if values[name] < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {values[name]}")
    if values["temp_reserve_mb"] is not None and values["temp_reserve_mb"] < 0:
        parser.error(f"--temp-reserve-mb must be 0 or more, got {values['temp_reserve_mb']:g}")
    if values["max_per_client"] is not None and values["max_per_client"] < 0:
        parser.error(f"--max-per-client must be 0 (no limit) or more, got {values['max_per_client']}")
    for name in ("request_timeout_s", "restart_grace_s", "worker_start_timeout_s", "monitor_interval_s", "max_upload_mb",
                 "temp_file_ttl_s", "gpu_log_max_mb", "read_timeout_s"):
        if values[name] <= 0:
            flag = "--" + name.removesuffix("_s").replace("_", "-")
            parser.error(f"{flag} must be positive, got {values[name]:g}")
    if values["auth"] is not None and (":" not in values["auth"] or not all(values["auth"].partition(":")[::2])):
        parser.error("--auth must look like USER:PASSWORD, both non-empty")
    if values["auth"] is not None:
        # Gradio's login strips the user name typed (not the password): kept here, " user " could
        # never log in, and a stray space in an env file locked everyone out with no word at start
        # (forty-fourth newcomer session). Neither part is shown: either may be the other's secret.
        why = {"user name": "which no login could match (Gradio strips the user name typed)",
               "password": "which every login would then have to type too"}
        for part, name in zip(values["auth"].partition(":")[::2], ("user name", "password")):
            if part != part.strip():
                parser.error(f"--auth: the {name} starts or ends with a space (or another blank), {why[name]}; a "
                             f"stray space in an env file or quotes is the usual cause. Remove it.")
    if values["metrics_token"] is not None and not values["metrics_token"].strip():
        parser.error("--metrics-token must not be empty; leave it unset to keep /metrics and /healthz open")
    if values["metrics_token"] is not None and not re.fullmatch(r"[A-Za-z0-9._~+/-]+=*", values["metrics_token"]):
        # RFC 6750's token68 syntax: HTTP sends header bytes as Latin-1, so "tøken" sent by curl in
        # UTF-8 never matched, and a space cannot be sent at all (thirty-third newcomer session).
        parser.error("--metrics-token may hold only ASCII letters, digits and - . _ ~ + / (a bearer token, RFC 6750); "
                     "it has a space or another character. Generate one with: openssl rand -hex 32")
    if values["restart_cooldown_s"] < 0:
        parser.error(f"--restart-cooldown must be 0 (off) or more seconds, got {values['restart_cooldown_s']:g}")
    if values["leak_threshold_mb"] < 0 or not 0 <= values["leak_threshold_fraction"] <= 1:
        parser.error("--leak-threshold-mb must be >= 0 and --leak-threshold-fraction within [0, 1]")
    if not 0 <= values["memory_reserve"] < 1:
        parser.error(f"--memory-reserve must be a fraction in [0, 1), got {values['memory_reserve']}")
    from .monitor.gpu_log import is_gpu_log
    from .monitor.ledger import is_ledger

    kinds = {"gpu_log": (is_gpu_log, "GPU log", True), "ledger": (is_ledger, "ledger", False)}
    for name in ("gpu_log", "ledger"):
        problem = _append_problem(values[name], *kinds[name]) if values[name] else None
        if problem:
            parser.error(f"--{name.replace('_', '-')} {values[name]!r}: {problem}")
    same = next((log for log in (values["gpu_log"], values["gpu_log"] + ".1")
                 if _same_file(log, values["ledger"])), None) if values["gpu_log"] and values["ledger"] else None
    if same:
        # The memory log's text lines made the JSON-lines ledger unreadable (eighteenth newcomer
        # session); two hard links to one empty file passed a check of their paths (helper-150), and
        # the GPU log's rotation replaced a ledger at its PATH.1 (helper-152).
        rotation = "" if same == values["gpu_log"] else ", the file the GPU log's rotation moves it to, over the ledger"
        parser.error(f"--gpu-log and --ledger name the same file ({values['ledger']!r}{rotation}); give each its own")
    if values["engine"] == "cosyvoice":
        for name in ("model_dir", "cosyvoice_repo"):
            flag = "--" + name.replace("_", "-")
            if not values[name]:
                parser.error(f"--engine cosyvoice needs {flag} PATH (see the README's CosyVoice section)")
            if os.path.exists(values[name]) and not os.path.isdir(values[name]):
                parser.error(f"{flag} {values[name]!r} is a file, not a folder")
            if not os.path.isdir(values[name]):
                parser.error(f"{flag} {values[name]!r}: no such folder")
    if values["idle_unload_after_s"] is not None and values["idle_unload_after_s"] < 0:
        parser.error(f"--idle-unload-after must be a positive number of seconds, or off (or 0) to keep the model "
                     f"loaded; got {values['idle_unload_after_s']:g}")
    if values["retry_failed_load_after_s"] is not None and values["retry_failed_load_after_s"] < 0:
        parser.error(f"--retry-failed-load-after must be a positive number of seconds, or off (or 0) to wait for "
                     f"Restart; got {values['retry_failed_load_after_s']:g}")
    _check_upper_limits(parser, values)
    _warn_about_segments(values["max_segment_chars"], values["max_text_chars"], from_env)
    _warn_about_self_defeating_limits(values, from_env)
    _warn_about_engine_flags(values, from_env)
    if any(not h.strip() for h in values["allowed_hosts"] or ()):
        # "--allowed-host $PROXY_NAME" with the variable unset ran as if the flag were not given (helper-103).
        parser.error("--allowed-host is given an empty name; give the proxy's host name, such as voices.example.org")
    values["allowed_hosts"] = tuple(_allowed_host(parser, h) for h in values["allowed_hosts"] or ())
    values["forwarded_allow_ips"] = _forwarded_allow_ips(parser, values["forwarded_allow_ips"], from_env)
    values["frame_ancestors"] = _frame_ancestors(parser, values["frame_ancestors"], from_env)
    return Settings(**values)


# One CSP source: a quoted keyword, or a scheme or host source (CSP Level 3, "source-expression").
_FRAME_SOURCE_RE = re.compile(r"^('self'|'none'|\*|[a-z][a-z0-9+.-]*:|([a-z][a-z0-9+.-]*://)?(\*|(\*\.)?"
                              r"[a-z0-9-]+(\.[a-z0-9-]+)*)(:(\d{1,5}|\*))?(/[^\s;,'?#]*)?)$", re.IGNORECASE)


def _any_page(source: str) -> bool:
    """Whether a frame-ancestors source lets pages anywhere (or in a whole top-level domain) frame
    the app: ``*``, ``https:``, ``https://*``, ``*:*``, ``*.com``."""
    if source.lower() in ("http:", "https:", "data:"):  # any page can make a data: document
        return True
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", source, flags=re.I).split("/")[0].split(":")[0]
    return host == "*" or (host.startswith("*.") and host.count(".") == 1)


def _frame_ancestors(parser: argparse.ArgumentParser, value: str, from_env: dict[str, str]) -> str:
    """``--frame-ancestors`` as one CSP source list (blanks between sources made single). Each
    source must be one CSP knows: unquoted, ``self`` names a host called "self", and the app's own
    pages could no longer frame it (helper-101); a ``;``, ``,`` or line break would end the
    directive, add a policy or end the header. Any page (``*``, ``https:``) is allowed with a
    warning: it brings back clickjacking (helper-99)."""
    sources = value.split()
    bad = next((t for t in sources if not _FRAME_SOURCE_RE.match(t) or t.lower() in ("self", "none")
                or any(not 0 < int(p) <= 65535 for p in re.findall(r":(\d+)", t))), None) if value.isprintable() else value
    if not sources or bad is not None or ("'none'" in sources and len(sources) > 1):
        hint = (f" ({bad!r} is no source: write 'self' and 'none' with their quotes)"
                if bad and bad.lower() in ("self", "none") else f" ({bad[:60]!r} is no source)" if bad else "")
        parser.error(f"--frame-ancestors {value[:100]!r} is not a frame-ancestors source list{hint}; give "
                     f"sources separated by blanks, such as \"'self' https://huggingface.co\", or 'none' alone")
    if any(_any_page(t) for t in sources):
        _warn(f"--frame-ancestors {' '.join(sources)!r} lets pages at any address show the app in a frame, where a "
              f"click on their bait can press its buttons (Restart) as the visitor; name the embedding site "
              f"instead, such as \"'self' https://huggingface.co\"", from_env)
    return " ".join(sources)


def _forwarded_allow_ips(parser: argparse.ArgumentParser, value: str | None,
                         from_env: dict[str, str]) -> tuple[str, ...]:
    """``--forwarded-allow-ips`` as uvicorn's ``forwarded_allow_ips`` takes it: addresses, networks
    (``10.0.0.0/8``) or ``*``. uvicorn's default (127.0.0.1) let any local client name any address
    in ``X-Forwarded-For``, past the per-address heartbeat limit (helper-99), so there is none here;
    something that is no address (a host name, which uvicorn would compare as text) is refused."""
    entries = tuple(e.strip() for e in value.split(",")) if value is not None else ()
    if value is not None and not all(entries):
        # "--forwarded-allow-ips $PROXY_IP" with the variable unset trusted no proxy, silently (helper-103).
        parser.error(f"--forwarded-allow-ips {value[:100]!r} has an empty entry; give the proxy's address, such as "
                     f"127.0.0.1, or addresses separated by commas")
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            parser.error(f"--forwarded-allow-ips {entry[:100]!r} is not an address or network; give the proxy's "
                         f"address as it connects (127.0.0.1 for one on this machine), a network such as "
                         f"10.0.0.0/8, or *")
    if any(e == "*" or ipaddress.ip_network(e, strict=False).prefixlen == 0 for e in entries):
        _warn(f"--forwarded-allow-ips {','.join(entries)!r} takes X-Forwarded-For from any client, so each can name "
              f"its own address and pass the per-address limit on heartbeats; and every connecting address, a "
              f"remote proxy's too, holds at most half of the connections. Give your proxy's address instead, "
              f"such as 127.0.0.1 or 10.0.0.5", from_env)
    return entries


_HOST_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$")


def _allowed_host(parser: argparse.ArgumentParser, value: str) -> str:
    """One ``--allowed-host`` value as the Host check compares it: lower case, without a port
    (``proxy.example:8443`` is what nginx's ``$http_host`` sends; the port is not compared:
    helper-53's name with a port never matched); anything that is no host name is refused."""
    name = value.strip().lower()
    if any(sign in name for sign in "/@"):  # a pasted URL ("https://proxy.example") allowed "https"
        parser.error(f"--allowed-host {value.strip()[:100]!r} is not a host name; give the name alone, such as "
                     f"voices.example.org, not a URL")
    if name.startswith("["):  # [v6 address]:port
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    name = name.removesuffix(".")  # the Host check compares names without DNS's final dot
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    if not _HOST_NAME_RE.match(name):
        parser.error(f"--allowed-host {value.strip()[:100]!r} is not a host name; give a name such as "
                     f"voices.example.org (a port after it is allowed and ignored)")
    return name


def _set_by_variables(argv: list[str]) -> dict[str, str]:
    """``{flag: variable}`` for the settings a ``COSYVOICE_UI_*`` variable set (not the command line)."""
    def given(flag: str) -> bool:
        return any(a == flag or a.startswith(flag + "=") for a in argv)
    return {flag: variable for variable, (flag, _) in _ENV_CHECKS.items() if variable in os.environ and not given(flag)}


def _name_variables_in_errors(parser: argparse.ArgumentParser, from_env: dict[str, str]) -> None:
    # A range error about a value that came from a variable names the variable, as a malformed
    # one does; "--max-queue 1001 is over ..." sent the user looking for a flag they never typed.
    error = parser.error

    def error_naming_variable(message: str):
        error(_naming_variable(message, from_env))

    parser.error = error_naming_variable  # type: ignore[method-assign]


def _naming_variable(message: str, from_env: dict[str, str]) -> str:
    """``message`` about ``--flag ...`` prefixed with the variable that set the flag, if one did."""
    flag = next((f for f in from_env if re.match(re.escape(f) + r"(?=[ =:]|$)", message)), None)
    if flag is None:
        return message
    return f"{_shown(from_env[flag])} (the variable for {flag}): {message}"


def _warn(message: str, from_env: dict[str, str]) -> None:
    # Warnings name the variable too: "--gpu-log-max-mb 3 has no effect" sent the user looking
    # for a flag they never typed (twenty-fourth newcomer session), as errors once did.
    print(f"warning: {_naming_variable(message, from_env)}", file=sys.stderr)


def seconds_text(value: float) -> str:
    """Seconds as a person writes them: 2592000, not 2.592e+06 (absurd values stay short: 1e+300)."""
    return f"{value:.0f}" if 1e4 <= abs(value) < 1e10 else f"{value:g}"


# Upper limits. A duration past what a thread can wait for (threading.TIMEOUT_MAX, about 292
# years here) made Restart, Free cache and the shutdown raise OverflowError, and SIGTERM never
# ended the app (fifteenth newcomer session: --restart-grace 1e10); 30 days is past any real
# wait. The others keep one setting from undoing a memory bound: every waiting request holds its
# decoded prompt audio in the web process.
_MAX_DURATION_S = 30 * 86400
_DURATIONS = ("request_timeout_s", "restart_grace_s", "restart_cooldown_s", "worker_start_timeout_s",
              "monitor_interval_s", "idle_unload_after_s", "retry_failed_load_after_s", "temp_file_ttl_s",
              "read_timeout_s")
_MIN_MONITOR_INTERVAL_S = 0.1
_SMALL_GPU_LOG_MB = 1  # about 2.6 hours per file at one sample a second
_GPU_LOG_LINE_BYTES = 111  # one sample, one GPU (format_dmon_line measured on this machine)
_MAXIMA = {"max_queue": (1000, "each waiting request holds its prompt audio in memory"),
           "max_text_chars": (100_000, "send a longer text in parts"),
           "max_upload_mb": (1024, "a voice prompt needs a few MiB"),
           "leak_window": (1000, "the watchdog compares medians of this many requests"),
           "gpu_log_max_mb": (1_000_000, "a terabyte of memory samples")}


def _check_upper_limits(parser: argparse.ArgumentParser, values: dict) -> None:
    for name in _DURATIONS:
        if values[name] is not None and values[name] > _MAX_DURATION_S:
            flag = "--" + name.removesuffix("_s").replace("_", "-")
            parser.error(f"{flag} {seconds_text(values[name])} s is longer than the longest supported, {_MAX_DURATION_S} s "
                         "(30 days)")
    if values["monitor_interval_s"] < _MIN_MONITOR_INTERVAL_S:
        parser.error(f"--monitor-interval {values['monitor_interval_s']:g} s would keep a core busy sampling "
                     f"memory; use {_MIN_MONITOR_INTERVAL_S:g} s or more (default 1)")
    for name, (maximum, why) in _MAXIMA.items():
        if values[name] > maximum:
            value = f"{values[name]:g}" if isinstance(values[name], float) else values[name]
            parser.error(f"--{name.replace('_', '-')} {value} is over the most supported, {maximum} ({why})")


# Below this even a short sentence may miss its deadline (a fresh worker's first request, a
# busy CPU): with --request-timeout 1 the first request failed and restarted the worker.
_SHORT_REQUEST_TIMEOUT_S = 5.0
# Growth below these is allocator noise (the embedded worker moves by a few MiB between requests);
# zero thresholds restarted the worker every few requests.
_TINY_LEAK_MB = 1.0
_TINY_LEAK_FRACTION = 0.005
_LARGE_MEMORY_RESERVE = 0.9
_SHORT_TEMP_FILE_TTL_S = 60.0
_SHORT_IDLE_UNLOAD_S = 30.0
_SHORT_LOAD_RETRY_S = 60.0
# A 10 s prompt as 16-bit mono WAV at 48 kHz: 0.94 MB. Below this an ordinary prompt is refused.
_SMALL_UPLOAD_MB = 1.0


def _warn_about_self_defeating_limits(values: dict, from_env: dict[str, str]) -> None:
    if values["gpu_log_max_mb"] != Settings.gpu_log_max_mb and not values["gpu_log"]:
        _warn(f"--gpu-log-max-mb {values['gpu_log_max_mb']:g} has no effect without --gpu-log PATH", from_env)
    elif values["gpu_log"] and values["gpu_log_max_mb"] < _SMALL_GPU_LOG_MB:
        minutes = values["gpu_log_max_mb"] * 2**20 / (_GPU_LOG_LINE_BYTES / values["monitor_interval_s"]) / 60
        _warn(f"--gpu-log-max-mb {values['gpu_log_max_mb']:g}: each GPU log file holds about {minutes:.2g} "
              f"minutes of samples at one every {values['monitor_interval_s']:g} s (one older file is kept); use "
              f"{_SMALL_GPU_LOG_MB:g} or more (default 100)", from_env)
    if values["max_upload_mb"] < _SMALL_UPLOAD_MB:
        # 0.0000001 started with no word, and every upload then got 413 "at most 0 bytes" (helper-131).
        _warn(f"--max-upload-mb {values['max_upload_mb']:g}: uploads over {values['max_upload_mb'] * 2**20:,.0f} bytes "
              "are refused, and a 10 s prompt as 16-bit WAV at 48 kHz is about 0.94 MB (compressed formats less); "
              f"use {_SMALL_UPLOAD_MB:g} or more (default 20)", from_env)
    if values["request_timeout_s"] < _SHORT_REQUEST_TIMEOUT_S:
        _warn(f"--request-timeout {values['request_timeout_s']:g} s: a request that runs longer fails and "
              "the worker is restarted; even a short sentence can take seconds (the first on a fresh worker, or on "
              f"a busy CPU). Use {_SHORT_REQUEST_TIMEOUT_S:g} s or more (default 120).", from_env)
    if (values["restart_on_leak"] and values["leak_threshold_mb"] < _TINY_LEAK_MB
            and values["leak_threshold_fraction"] < _TINY_LEAK_FRACTION):
        _warn(f"--leak-threshold-mb {values['leak_threshold_mb']:g} and --leak-threshold-fraction "
              f"{values['leak_threshold_fraction']:g}: growth of the worker's memory this small (under "
              f"{_TINY_LEAK_MB:g} MB) is normal and would count as a leak: the worker may be restarted after ordinary "
              "requests (a leak is judged on the median of the last --leak-window requests, after 4). Keep one of "
              f"them at least {_TINY_LEAK_MB:g} MB or {_TINY_LEAK_FRACTION:g} (defaults 200 MB and 0.05), or turn "
              "restarts off with --no-restart-on-leak.", from_env)
    if values["memory_reserve"] > _LARGE_MEMORY_RESERVE:
        _warn(f"--memory-reserve {values['memory_reserve']:g}: admission keeps that fraction of the device's "
              "memory free, so most requests will be refused as not fitting. The default is 0.10.", from_env)
    if values["temp_file_ttl_s"] < _SHORT_TEMP_FILE_TTL_S:
        _warn(f"--temp-file-ttl {seconds_text(values['temp_file_ttl_s'])} s: results and uploaded prompts are "
              "deleted this soon, so a page played (or a result downloaded) a little later finds them gone. Use "
              f"{_SHORT_TEMP_FILE_TTL_S:g} s or more (default 3600).", from_env)
    if values["max_per_client"] and values["max_per_client"] > values["max_queue"]:
        # One client's share larger than the queue limits no one (helper-63: accepted without a word).
        _warn(f"--max-per-client {values['max_per_client']} is more than --max-queue {values['max_queue']}: one "
              "client can then take every place in the queue, as with no limit (0). Use at most the queue's size "
              "(default: half of it).", from_env)
    if values["idle_unload_after_s"] is not None and values["idle_unload_after_s"] < _SHORT_IDLE_UNLOAD_S:
        _warn(f"--idle-unload-after {seconds_text(values['idle_unload_after_s'])} s: the model is unloaded "
              "between requests this far apart, and the next one waits for it to load again. Use "
              f"{_SHORT_IDLE_UNLOAD_S:g} s or more unless the device is needed for other work.", from_env)

    retry = values["retry_failed_load_after_s"]
    if retry is not None and retry < _SHORT_LOAD_RETRY_S:
        _warn(f"--retry-failed-load-after {seconds_text(retry)} s: a model that cannot load (missing weights, too "
              "little memory) is loaded again this often, three tries each time. Use "
              f"{_SHORT_LOAD_RETRY_S:g} s or more.", from_env)


def _warn_about_engine_flags(values: dict, from_env: dict[str, str]) -> None:
    if values["engine"] == "cosyvoice":
        return
    given = [from_env.get(flag, flag) for flag, name in (("--load-trt", "load_trt"), ("--load-vllm", "load_vllm"),
                                                         ("--model-dir", "model_dir"),
                                                         ("--cosyvoice-repo", "cosyvoice_repo")) if values[name]]
    if given:
        one = len(given) == 1
        print(f"warning: {', '.join(given)} only appl{'ies' if one else 'y'} to --engine cosyvoice; with --engine "
              f"{values['engine']} {'it is' if one else 'they are'} ignored.", file=sys.stderr)
