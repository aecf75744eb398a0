"""cosyvoice_ui: voice-cloning text-to-speech in the browser, with the model in a supervised worker.

Where things happen:
    inputs/   validation and decoding of what a user sends (web process, pure functions)
    worker/   the supervisor (web process) and the worker process it spawns; the only code that
              knows about processes, pipes and signals
    engines/  the models, behind one interface; they run only inside the worker
    monitor/  NVML and host-memory sampling (web process, never imports torch.cuda)
    ui/       Gradio layout and thin handlers; server.py adds /healthz
"""

__version__ = "0.1.0"
