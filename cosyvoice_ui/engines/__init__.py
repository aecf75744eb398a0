"""Synthesis engines behind one interface (:mod:`.base`), looked up by name.

Adding an engine: a module with an :class:`~.base.Engine` subclass and one line in
:data:`ENGINES`. ``--engine module:Class`` loads any other importable engine (tests use this
for engines that crash, hang or leak on purpose).
"""

from __future__ import annotations

import importlib

from .base import Capabilities, Engine

ENGINES: dict[str, str] = {
    "embedded": "cosyvoice_ui.engines.embedded.engine:EmbeddedEngine",
    "embedded-torch": "cosyvoice_ui.engines.embedded.engine:EmbeddedTorchEngine",
    "embedded-onnx": "cosyvoice_ui.engines.embedded.engine:EmbeddedOnnxEngine",
    "cosyvoice": "cosyvoice_ui.engines.cosyvoice.engine:CosyVoiceEngine",
}


def resolve_engine_class(name: str) -> type[Engine]:
    """The engine class for a registry name or a ``module:Class`` path.

    Raises:
        ValueError: unknown name, or the path does not name an Engine subclass.
    """
    spec = ENGINES.get(name, name)
    if ":" not in spec:
        raise ValueError(f"Unknown engine {name!r}. Known engines: {', '.join(ENGINES)}; or give module:Class.")
    module_name, _, class_name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"Cannot load engine {name!r} ({spec}): {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise ValueError(f"{spec} is not an Engine subclass")
    return cls


def engine_capabilities(name: str) -> Capabilities:
    """Capabilities of an engine without loading its weights."""
    return resolve_engine_class(name).capabilities
