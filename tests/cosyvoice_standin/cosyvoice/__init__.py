"""A stand-in for the official CosyVoice repository (FunAudioLLM/CosyVoice), for tests only.

It reproduces what the adapter depends on - module path, class names, constructor arguments,
generator methods, yield shapes, sample rates and the assertions of the real code (see
../shared/docs/cosyvoice-api.md) - and makes a tone instead of speech. It also records every
call in the JSON-lines file named by $COSYVOICE_STANDIN_LOG, so tests can check what the adapter
asked for, and misbehaves on request through $COSYVOICE_STANDIN_FAULT or a file STANDIN_FAULT in the model folder
(nan, inf, silence, hang, llm-error) the way the real model has been seen to.
"""
