"""Gradio layout (:mod:`.layout`), thin event handlers (:mod:`.handlers`), display formatting
(:mod:`.formatting`) and the English/Chinese strings (:mod:`.i18n`)."""
