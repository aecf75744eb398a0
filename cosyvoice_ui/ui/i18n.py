"""Interface strings in English and Chinese; Gradio picks the browser's language."""

from __future__ import annotations

import gradio as gr

EN = {
    "title": "# Voice cloning text-to-speech",
    "subtitle": "Upload or record a 3-10 s voice prompt, type a sentence, and hear it in that voice.",
    "generate_tab": "Generate",
    "prompt_audio": "Prompt audio (3-10 s of the voice to clone)",
    "prompt_text": "Prompt text (transcript of the prompt audio, optional)",
    "text": "Text to speak",
    "text_placeholder": "Hello! This voice was cloned from a short recording.",
    "text_placeholder_english": "Hello! This voice was cloned from a short recording.",
    "english_only": "This engine speaks English only; CosyVoice 3 speaks Chinese too (see the README).",
    "instruction": "Instruction (emotion or style, optional)",
    "instruction_placeholder": "happy, whisper, 用悲伤的语气 ...",
    "presets": "Instruction presets",
    "speed": "Speed",
    "seed": "Seed (-1 = random)",
    "generate": "Generate",
    "output_audio": "Result",
    "stats": "Stats",
    "monitor": "### GPU memory monitor",
    "restart": "Restart application",
    "free_cache": "Free cached memory",
    "restart_help": "Free cached memory empties the model process's allocator cache and keeps the model loaded. Restart ends the model process and starts a new one: all of its memory goes back to the system. Queued requests wait; none is lost.",
    "restart_result": "Last restart",
    "memory_plot": "Memory over the last 10 minutes (MiB)",
    "ledger": "Request ledger (latest first)",
    "speaker": "Pretrained speaker (instead of prompt audio)",
    "inline_tags": "Tags the model understands inside the text:",
}
ZH = {
    "title": "# 声音克隆语音合成",
    "subtitle": "上传或录制 3-10 秒的参考语音，输入文字，即可用该声音朗读。",
    "generate_tab": "生成",
    "prompt_audio": "参考音频（要克隆的声音，3-10 秒）",
    "prompt_text": "参考文本（参考音频的文字内容，可选）",
    "text": "要合成的文字",
    "text_placeholder": "你好！这个声音是从一段简短的录音克隆而来的。",
    # An engine that speaks English only refused the Chinese example the page offered (helper-65).
    "text_placeholder_english": "Hello! This voice was cloned from a short recording.",
    "english_only": "当前引擎只会说英语，请输入英文；CosyVoice 3 也能说中文（见 README）。",
    "instruction": "指令（情感或风格，可选）",
    "instruction_placeholder": "开心、耳语、用悲伤的语气 ……",
    "presets": "指令预设",
    "speed": "语速",
    "seed": "随机种子（-1 为随机）",
    "generate": "生成",
    "output_audio": "合成结果",
    "stats": "统计",
    "monitor": "### 显存监控",
    "restart": "重启应用",
    "free_cache": "释放缓存显存",
    "restart_help": "释放缓存显存：清空模型进程的分配器缓存，模型保持加载。重启应用：结束模型进程并启动新进程，其占用的内存全部归还系统。排队中的请求会等待，不会丢失。",
    "restart_result": "上次重启",
    "memory_plot": "最近 10 分钟的内存（MiB）",
    "ledger": "请求记录（最新在前）",
    "speaker": "预置音色（代替参考音频）",
    "inline_tags": "文本中可用的标记：",
}

I18N = gr.I18n(en=EN, zh=ZH, **{"zh-CN": ZH, "zh-TW": ZH})
