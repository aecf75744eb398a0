"""cosyvoice_ui: voice-cloning text-to-speech in the browser, with the model in a supervised worker.

Where things happen:
    inputs/   validation and decoding of what a user sends (web process, pure functions; FFmpeg
              decodes in a child process of its own per file, inputs/pyav_process.py)
    worker/   the supervisor (web process) and the model's worker process it spawns, with its
              pipes and signals
    engines/  the models, behind one interface; they run only inside the worker
    monitor/  NVML and host-memory sampling (web process, never imports torch.cuda)
    ui/       Gradio layout and thin handlers; server.py adds /healthz
"""

__version__ = "0.1.0"
# Every log line of the app, its worker included: time, level, logger, message.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
