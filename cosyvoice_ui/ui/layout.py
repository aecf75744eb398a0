"""The page: a Generate column and a Monitor column, wired to :class:`~.handlers.Handlers`."""

from __future__ import annotations

import os
from pathlib import Path

import gradio as gr

from . import formatting
from .api_blocks import ApiBlocks
from .handlers import Handlers
from .i18n import I18N

SPEED_MIN, SPEED_MAX = 0.5, 2.0
# Gradio gives the plot's chart the block's whole height, although the block's label takes room
# above it, and clips the block: the legend under the chart (the names of the lines) was cut
# off. Let it show, with room kept below for it.
PAGE_CSS = ("#memory_plot { overflow: visible !important; margin-bottom: 16px; }\n"
            # Keyboard focus on the Speed slider and the presets field drew nothing at all (helper-71).
            "#speed input[type=range]:focus-visible, #presets input:focus-visible "
            "{ outline: 2px solid #2563eb; outline-offset: 2px; }")
# Run by the page on load (Gradio takes one function): prompt_upload.js gives recordings that
# Chromium calls video (.webm) an audio type, names without markup, and stops files over the
# upload limit with their size; microphone.js says why recording cannot work on plain
# http from another machine, and holds Generate while the prompt is still being recorded;
# upload_refusal.js shows an upload's refusal (413, 507) without the JSON around its message;
# session_lost.js says when an --auth login has ended, and keeps what the visitor had across the
# reload Gradio makes after a dropped connection; page_state.js is what the last two tell each other.
def _script(name: str) -> str:
    return Path(__file__).with_name(name).read_text(encoding="utf-8").strip()


PAGE_JS = (f"() => {{\nconst note = {_script('page_note.js')};\nconst shared = ({_script('page_state.js')})();\n"
           + "".join(f"({_script(name)})(note, shared);\n" for name in ("prompt_upload.js", "microphone.js",
                                                                             "upload_refusal.js", "session_lost.js")) + "}")


# Gradio's Share button posts to a Hugging Face Space's discussions; anywhere else it only said
# "Must be on Spaces to share." (helper-71). Spaces set SPACE_ID.
AUDIO_BUTTONS = ["download", "share"] if os.environ.get("SPACE_ID") else ["download"]

# Shown on Gradio's "Use via API" page (it showed the handlers' docstrings, notes for developers).
# Plain text: the page shows Markdown's backticks as typed (helper-65).
API_DESCRIPTIONS = {
    "synthesize": "Speak text in the voice of prompt_audio (3-10 s of speech is best; 1-30 s is accepted) "
                  "or of a pretrained speaker of a CosyVoice model. Optional: prompt_text (what the prompt says), instruction (an "
                  "emotion or style such as happy, 用悲伤的语气), speed (0.5-2.0), seed (-1: random; stats.seed is "
                  "null where the engine cannot apply seeds, as the default embedded engine on the CPU, whose "
                  "results then differ a little each time). "
                  "Returns the WAV and its stats: audio_s, synthesis_s, real_time_factor, peak_memory_bytes, "
                  "seed, notes, ...",
    "synthesize_stream": "Like /synthesize, but yields one WAV per chunk as it is made, then the stats.",
    "status": "Worker state, pid, device, queue depth, restarts and memory figures.",
    "restart": "Replace the worker process (the running request may finish first); returns old and new pid, "
               "duration_s, since_press_s, waited_for_request and memory before and after. Refused within "
               "--restart-cooldown.",
    "free_cache": "Empty the worker's allocator caches; returns torch reserved (CUDA) and RSS before and after.",
}


def _api_twins(speakers: list[str]) -> list[gr.components.Component]:
    """Hidden inputs of the API's synthesis endpoints, one per page field, with the same types
    and defaults, labelled with the parameter names."""
    prompt_audio = gr.Audio(label="prompt_audio", sources=["upload"], type="filepath", visible=False)
    # The "Use via API" page's example was Gradio's sample on GitHub, a URL this server refuses to
    # download (helper-51): a local file instead, which gradio_client's handle_file uploads.
    prompt_audio.example_payload = lambda: {"path": "voice.wav", "meta": {"_type": "gradio.FileData"},
                                            "orig_name": "voice.wav"}
    prompt_audio.example_value = lambda: "voice.wav"
    return [gr.Textbox(label="text", visible=False),
            prompt_audio,
            gr.Textbox(label="prompt_text", visible=False),
            gr.Textbox(label="instruction", visible=False),
            gr.Slider(SPEED_MIN, SPEED_MAX, value=1.0, step=0.05, label="speed", visible=False),
            gr.Number(value=-1, precision=0, label="seed", visible=False),
            gr.Dropdown(label="speaker", choices=[("", "")] + [(x, x) for x in speakers], value="", visible=False)]


def build_blocks(handlers: Handlers) -> gr.Blocks:
    """Build the Gradio Blocks. Event names (``api_name``) are the stable public API."""
    caps = handlers.capabilities
    settings = handlers.settings
    facts = handlers.supervisor.status()["engine_facts"]  # the first load is done before the page is built
    speakers = list(facts.get("speakers") or [])
    # Uploads and results in Gradio's cache are deleted --temp-file-ttl after they were written
    # (an hour by default), so a server that runs for days does not fill its temp folder.
    # No analytics: Gradio's reached the Hugging Face Hub at every start (helper-110); nothing
    # leaves the machine unasked.
    with ApiBlocks(title="cosyvoice_ui", on_refused=handlers.record_refused_call, analytics_enabled=False,
                   delete_cache=(settings.temp_file_check_s, max(1, int(settings.temp_file_ttl_s)))) as demo:
        gr.Markdown(I18N("title"), elem_id="title")
        gr.Markdown(I18N("subtitle"))
        english_only = tuple(caps.languages or ()) == ("en",)
        if english_only:
            gr.Markdown(I18N("english_only"), elem_id="english_only")
        with gr.Row():
            with gr.Column(scale=3):
                prompt_audio = gr.Audio(label=I18N("prompt_audio"), sources=["upload", "microphone"],
                                        type="filepath", elem_id="prompt_audio", buttons=AUDIO_BUTTONS)
                prompt_text = gr.Textbox(label=I18N("prompt_text"), lines=1, elem_id="prompt_text")
                speaker = gr.Dropdown(label=I18N("speaker"), choices=[("", "")] + [(x, x) for x in speakers],
                                      value="", visible=bool(speakers), elem_id="speaker")
                text = gr.Textbox(label=I18N("text"), lines=3, elem_id="text",
                                  placeholder=I18N("text_placeholder_english" if english_only else "text_placeholder"))
                if facts.get("inline_tags"):
                    # Code spans: the tags are shown as typed, never rendered as HTML.
                    with gr.Row(elem_id="inline_tags"):
                        gr.Markdown(I18N("inline_tags"))
                        gr.Markdown(" ".join(f"`{tag}`" for tag in facts["inline_tags"]))
                with gr.Row():
                    instruction = gr.Textbox(label=I18N("instruction"), placeholder=I18N("instruction_placeholder"),
                                             scale=2, elem_id="instruction",
                                             interactive=bool(caps.instruction_presets))
                    presets = gr.Dropdown(label=I18N("presets"), choices=list(caps.instruction_presets),
                                          value=None, scale=1, elem_id="presets",
                                          visible=bool(caps.instruction_presets))
                with gr.Row():
                    speed = gr.Slider(SPEED_MIN, SPEED_MAX, value=1.0, step=0.05, label=I18N("speed"), elem_id="speed")
                    seed = gr.Number(value=-1, precision=0, label=I18N("seed"), elem_id="seed")
                generate = gr.Button(I18N("generate"), variant="primary", elem_id="generate")
                # --stream: the browser plays chunks as they come (Gradio encodes them with ffmpeg).
                output_audio = gr.Audio(label=I18N("output_audio"), type="numpy", format="wav",
                                        interactive=False, elem_id="output_audio", buttons=AUDIO_BUTTONS,
                                        streaming=settings.stream, autoplay=settings.stream)
                stats = gr.JSON(label=I18N("stats"), elem_id="stats")
            with gr.Column(scale=2):
                gr.Markdown(I18N("monitor"), elem_id="monitor_heading")
                status_md = gr.Markdown(elem_id="monitor_status")
                # 24-hour times (the default axis shows "09 PM"); fixed colours (by default they follow the
                # order the series first appear in, which changes between page loads).
                plot = gr.LinePlot(x="time", y="MiB", color="series", label=I18N("memory_plot"),
                                   height=320, elem_id="memory_plot", x_axis_format="%H:%M:%S", color_title="memory",
                                   x_title="time (this browser's zone)",
                                   color_map=formatting.SERIES_COLORS)
                with gr.Row():
                    free_cache = gr.Button(I18N("free_cache"), elem_id="free_cache")
                    restart = gr.Button(I18N("restart"), variant="stop", elem_id="restart")
                gr.Markdown(I18N("restart_help"))
                restart_md = gr.Markdown(elem_id="restart_result")
                # Its own box: Free cache then Restart pressed while a request ran showed only the Free
                # cache report, which finished last and took the one box (helper-62).
                free_cache_md = gr.Markdown(elem_id="free_cache_result")
                status_json = gr.JSON(label="report", visible=False)
        # Full width: the ledger has more columns than the monitor column can show.
        ledger = gr.Dataframe(label=I18N("ledger"), elem_id="ledger", interactive=False)

        presets.change(lambda p: p or gr.skip(), inputs=presets, outputs=instruction,
                       api_visibility="private", queue=False, show_progress="hidden")
        # An unusable prompt says so when it arrives, not only at Generate (an upload, a recording, a
        # restore). Queued (Gradio sends pop-ups only on its queue's stream), in a lane of its own,
        # one at a time: checks sent in a flood took both decoding children, and Generate's prompts
        # waited behind them (helper-146). A usable prompt shows nothing, so a wait is not seen.
        prompt_audio.change(handlers.check_prompt_page, inputs=prompt_audio, outputs=None, preprocess=False,
                            api_visibility="private", show_progress="hidden", trigger_mode="always_last",
                            concurrency_limit=1, concurrency_id="prompt_check")
        # The synthesize event may wait inside the supervisor's bounded queue, so Gradio must
        # let up to max_queue + 1 handlers wait there; the supervisor answers "busy" beyond that.
        fields = [text, prompt_audio, prompt_text, instruction, speed, seed, speaker]
        # preprocess=False: the handler gets the values as sent and validates them itself
        # (inputs/request.py), with messages that name the parameter; Gradio's preprocessing
        # would round a seed of 1.5 and turn any JSON value sent as text into a string.
        limits = dict(concurrency_limit=settings.max_queue + 2, concurrency_id="synthesize", preprocess=False)
        page_handler = handlers.synthesize_stream_page if settings.stream else handlers.synthesize_page
        # trigger_mode="multiple": Gradio's default ("once") dropped a press while the tab's own
        # request ran, silently: a second text typed meanwhile never ran (forty-ninth newcomer
        # session). Each press now reaches the service, which queues a new request and refuses
        # the same request again as a duplicate, with a message.
        generate.click(page_handler, inputs=fields, outputs=[output_audio, stats], trigger_mode="multiple",
                       api_name="synthesize_page", api_visibility="private", **limits)
        # The API has its own hidden twins of the fields and outputs, labelled with the parameter
        # names: Gradio's "Use via API" page showed the page's translated labels as "[object
        # Object]" (sixteenth newcomer session). /synthesize returns the whole WAV, also under
        # --stream; /synthesize_stream yields one WAV per chunk (iterate over client.submit(...)).
        api_fields, api_outputs = _api_twins(speakers), [gr.Audio(label="audio", type="numpy", format="wav",
                                                                  visible=False), gr.JSON(label="stats", visible=False)]
        gr.Button(visible=False).click(handlers.synthesize, inputs=api_fields, outputs=api_outputs,
                                       api_name="synthesize", api_description=API_DESCRIPTIONS["synthesize"], **limits)
        if settings.stream:
            gr.Button(visible=False).click(handlers.synthesize_stream, inputs=api_fields, outputs=api_outputs,
                                           api_name="synthesize_stream",
                                           api_description=API_DESCRIPTIONS["synthesize_stream"], **limits)
        restart.click(handlers.restart_ui, outputs=restart_md, api_visibility="private", show_progress="hidden",
                      concurrency_limit=4, concurrency_id="restart")
        # The free-cache report describes the worker a Restart ends: "No model is loaded ..." stayed
        # under a later Restart's report (helper-68). Cleared in the browser, no server call.
        restart.click(None, outputs=free_cache_md, js="() => ''", queue=False, api_visibility="private")
        # A lane of its own: Free cache waits for the running request however long it runs, and four
        # presses in Restart's lane held every Restart until that request ended (helper-125).
        free_cache.click(handlers.free_cache_ui, outputs=free_cache_md, api_visibility="private", show_progress="hidden",
                         concurrency_limit=4, concurrency_id="free_cache")
        gr.Button(visible=False).click(handlers.free_cache, outputs=status_json, api_name="free_cache",
                                       api_description=API_DESCRIPTIONS["free_cache"],
                                       concurrency_limit=4, concurrency_id="free_cache")
        # API-only endpoints with stable names.
        gr.Button(visible=False).click(handlers.restart, outputs=status_json, api_name="restart",
                                       api_description=API_DESCRIPTIONS["restart"],
                                       concurrency_limit=4, concurrency_id="restart")
        gr.Button(visible=False).click(handlers.status, outputs=status_json, api_name="status",
                                       api_description=API_DESCRIPTIONS["status"], queue=False)
        timer = gr.Timer(settings.monitor_interval_s)
        # queue=False: the monitor must never wait behind synthesis in Gradio's queue.
        timer.tick(handlers.refresh_monitor, outputs=[status_md, plot, ledger], queue=False,
                   show_progress="hidden", api_visibility="private")
        demo.load(handlers.refresh_monitor, outputs=[status_md, plot, ledger], queue=False,
                  show_progress="hidden", api_visibility="private")
    return demo
