() => {
  // Chromium names a .webm file (what browsers record) "video/webm", and Gradio's audio upload
  // accepts only audio/* types: the file was refused with "Invalid file type" and the request ran
  // in the built-in voice (thirty-fifth newcomer session). The prompt's upload gets such files
  // retyped as audio before Gradio's own handlers see them; the server decodes by content anyway.
  const AUDIO_TYPES = {webm: "audio/webm", weba: "audio/webm", mkv: "audio/x-matroska", mka: "audio/x-matroska",
                       mp4: "audio/mp4", m4a: "audio/mp4", mov: "audio/mp4", ogg: "audio/ogg", ogv: "audio/ogg",
                       opus: "audio/ogg", "3gp": "audio/3gpp", "3g2": "audio/3gpp2", m4v: "audio/mp4",
                       avi: "audio/x-msvideo", caf: "audio/x-caf"};
  // Phones save .3gp, Apple devices .caf and .m4v, cameras .avi: the page refused them with
  // "Invalid file type" while the API (PyAV) decodes them (forty-sixth newcomer session).
  const retyped = (files) => {
    let changed = false;
    const out = Array.from(files).map((f) => {
      const type = AUDIO_TYPES[(f.name.split(".").pop() || "").toLowerCase()];
      if (!type || f.type.startsWith("audio/")) return f;
      changed = true;
      return new File([f], f.name, {type, lastModified: f.lastModified});
    });
    if (!changed) return null;
    const transfer = new DataTransfer();
    out.forEach((f) => transfer.items.add(f));
    return transfer;
  };
  const inPrompt = (target) => target instanceof Element && target.closest("#prompt_audio") !== null;
  document.addEventListener("change", (e) => {
    const input = e.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "file" || !inPrompt(input) || !input.files) return;
    const transfer = retyped(input.files);
    if (transfer) input.files = transfer.files;
  }, true);
  document.addEventListener("drop", (e) => {
    if (e.cosyvoiceRetyped || !e.dataTransfer || !inPrompt(e.target)) return;
    const transfer = retyped(e.dataTransfer.files);
    if (!transfer) return;
    e.stopImmediatePropagation();
    e.preventDefault();
    const again = new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true});
    again.cosyvoiceRetyped = true;
    e.target.dispatchEvent(again);
  }, true);
}
