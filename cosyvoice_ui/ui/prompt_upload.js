(note) => {
  // Chromium names a .webm file (what browsers record) "video/webm", and Gradio's audio upload
  // accepts only audio/* types: the file was refused with "Invalid file type" and the request ran
  // in the built-in voice (thirty-fifth newcomer session). The prompt's upload gets such files
  // retyped as audio before Gradio's own handlers see them; the server decodes by content anyway.
  const AUDIO_TYPES = {webm: "audio/webm", weba: "audio/webm", mkv: "audio/x-matroska", mka: "audio/x-matroska",
                       mp4: "audio/mp4", m4a: "audio/mp4", mov: "audio/mp4", ogg: "audio/ogg", ogv: "audio/ogg",
                       opus: "audio/ogg", "3gp": "audio/3gpp", "3g2": "audio/3gpp2", m4v: "audio/mp4",
                       avi: "audio/x-msvideo", caf: "audio/x-caf", rf64: "audio/wav", w64: "audio/x-w64",
                       nut: "audio/x-nut", wv: "audio/x-wavpack", tta: "audio/x-tta", ape: "audio/x-ape",
                       amr: "audio/amr"};
  // Phones save .3gp, Apple devices .caf and .m4v, cameras .avi: the page refused them with
  // "Invalid file type" while the API (PyAV) decodes them (forty-sixth newcomer session); so were
  // RF64, Wave64 and NUT files and a file with no extension, which the browser gives no type
  // (helper-129): typeless files go to the server too, which decodes by content. So does every
  // other file (a .txt, a picture): Gradio dropped it with a list of MIME types, and Generate then
  // spoke in the built-in voice (helper-133); the server's check says what it is and what works.
  // Gradio's "Invalid file type" pop-up renders the file's name as HTML ("<u>x<u>.caf" came out
  // underlined; forty-sixth newcomer session): names lose the characters that make markup.
  const safeName = (name) => name.replace(/[<>&"'`]/g, "_");
  const retyped = (files) => {
    let changed = false;
    const out = Array.from(files).map((f) => {
      const type = AUDIO_TYPES[(f.name.split(".").pop() || "").toLowerCase()] || "audio/x-unknown";
      const name = safeName(f.name);
      const newType = type && !f.type.startsWith("audio/") ? type : f.type;
      if (name === f.name && newType === f.type) return f;
      changed = true;
      return new File([f], name, {type: newType, lastModified: f.lastModified});
    });
    if (!changed) return null;
    const transfer = new DataTransfer();
    out.forEach((f) => transfer.items.add(f));
    return transfer;
  };
  // A file over the upload limit got only Gradio's "exceed the maximum allowed size of 20.0 Mb"
  // (forty-sixth newcomer session): it is stopped here with its size and what would fit.
  const zh = (navigator.language || "").toLowerCase().startsWith("zh");
  const tooLarge = (files) => {
    const limit = window.gradio_config && window.gradio_config.max_file_size;
    const big = limit ? Array.from(files).find((f) => f.size > limit) : undefined;
    if (!big) return null;
    // MiB, as Gradio and --max-upload-mb count; with as many decimals as it takes to show the file
    // is larger ("20.0 MB" for a file 2000 bytes over a limit of "20.0 MB", forty-ninth session).
    const mib = (n) => n / 1048576;
    let digits = 1;
    while (digits < 6 && Number(mib(big.size).toFixed(digits)) <= mib(limit)) digits += 1;
    const size = mib(big.size).toFixed(digits), most = String(Number(mib(limit).toFixed(2)));
    return zh ? `文件大小为 ${size} MiB，上传上限为 ${most} MiB（--max-upload-mb）。参考音频只需 3-10 秒：` +
                "请剪出一段清晰的语音，或只导出音频（视频画面会让文件变大），例如 WAV 或 MP3。"
              : `The file is ${size} MiB; uploads are limited to ${most} MiB (--max-upload-mb). ` +
                "A prompt needs only 3-10 s of speech: cut a clean stretch, or export the sound alone " +
                "(a video's picture makes the file large), as WAV or MP3.";
  };
  const showNote = (text) => {
    if (text) {
      const el = note("upload_note", text, document.getElementById("prompt_audio"));
      if (el) delete el.dataset.pressDropped;  // a new refusal: microphone.js drops the next press again
    } else {
      const el = document.getElementById("upload_note");
      if (el) el.remove();
    }
  };
  const inPrompt = (target) => target instanceof Element && target.closest("#prompt_audio") !== null;
  document.addEventListener("change", (e) => {
    const input = e.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "file" || !inPrompt(input) || !input.files) return;
    const refusal = tooLarge(input.files);
    showNote(refusal);
    if (refusal) {
      e.stopImmediatePropagation();
      input.value = "";
      return;
    }
    const transfer = retyped(input.files);
    if (transfer) input.files = transfer.files;
  }, true);
  document.addEventListener("drop", (e) => {
    if (e.cosyvoiceRetyped || !e.dataTransfer || !inPrompt(e.target)) return;
    const refusal = tooLarge(e.dataTransfer.files);
    showNote(refusal);
    if (refusal) {
      e.stopImmediatePropagation();
      e.preventDefault();
      return;
    }
    const transfer = retyped(e.dataTransfer.files);
    if (!transfer) return;
    e.stopImmediatePropagation();
    e.preventDefault();
    const again = new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true});
    again.cosyvoiceRetyped = true;
    e.target.dispatchEvent(again);
  }, true);
}
