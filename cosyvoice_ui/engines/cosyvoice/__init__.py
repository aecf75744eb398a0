"""The CosyVoice 2 / CosyVoice 3 engine: the official package, loaded from a local clone and
local weights (:mod:`.loading`), driven in the right mode with the right prompt format
(:mod:`.prompt_format`), behind the common engine interface (:mod:`.engine`)."""
