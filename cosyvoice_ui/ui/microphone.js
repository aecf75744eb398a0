(note, shared) => {
  // Recording the prompt in the page. Two ways it went wrong without a word of why (forty-sixth
  // newcomer session):
  // - Browsers give pages the microphone only in a secure context (https://, or localhost):
  //   on plain http from another machine Gradio showed only "No microphone found".
  // - Generate pressed while still recording ran the request without the recording (Gradio
  //   has no value until Stop), in the built-in voice.
  // And Generate pressed while the prompt still uploads waits for it (below). __APP_PORT__ is the
  // port the app serves on (server.py fills it in; the tunnel said 7860 whatever it was: helper-72).
  const zh = (navigator.language || "").toLowerCase().startsWith("zh");
  const TEXT = zh ? {
    insecure: "浏览器只允许 https:// 页面或本机（localhost）页面使用麦克风，而此页面是从其他地址通过 http 打开的。" +
              "请上传录音文件，或通过 https（反向代理）或 SSH 隧道（ssh -L __APP_PORT__:127.0.0.1:__APP_PORT__ 服务器）在本机地址打开此页面。",
    recording: "仍在录音：请先点击参考音频下的“停止”结束录音，然后再点击“生成”。",
    uploading: "参考音频仍在上传：上传完成后将自动开始生成。在此之前文字和设置已锁定。",
    upload_failed: "参考音频上传失败（见上方提示），因此未开始生成。请重新上传；若要使用内置声音，请再次点击“生成”。",
  } : {
    insecure: "Browsers allow the microphone only on https:// pages or on localhost, and this page was opened " +
              "over plain http from another address. Upload a recording instead, or open the page through https " +
              "(a reverse proxy) or through an SSH tunnel to localhost (ssh -L __APP_PORT__:127.0.0.1:__APP_PORT__ server).",
    recording: "Still recording: press Stop under Prompt audio to finish the recording, then press Generate.",
    // Text edited while the press waited was the one spoken (helper-67): the fields are locked.
    uploading: "The prompt audio is still uploading: Generate runs once it has arrived. The text and " +
               "settings are locked until then.",
    upload_failed: "The prompt audio did not upload (see the message above), so Generate was not run. Upload " +
                   "it again, or press Generate once more to speak in the built-in voice.",
  };
  const prompt = () => document.getElementById("prompt_audio");
  const shown = (el) => el !== null && el.offsetParent !== null;
  const recording = () => {
    const p = prompt();
    return p !== null && Array.from(p.querySelectorAll(".stop-button, .stop-button-paused")).some(shown);
  };
  // Generate pressed while the prompt was still uploading ran the request without it, in the
  // built-in voice (a slow link; the browser test did it under load): the press waits for the
  // upload, then goes through.
  // Also while the page puts the prompt back after a reload or a dropped connection (session_lost.js).
  // And for a while after Stop, until the recording's file is on the server (its link): pressed
  // right after Stop on a busy machine, Generate ran before the recording's upload had begun, in
  // the built-in voice (this session's CI run).
  let stoppedAt = 0;
  const uploading = () => {
    const p = prompt();
    return p !== null && (Array.from(p.querySelectorAll(".uploading, .progress-bar")).some(shown) ||
                          shared.restoring ||
                          (Date.now() - stoppedAt < 15000 && p.querySelector("a[href*='/file=']") === null));
  };
  // One held press at most: each press held its own wait, and under load three presses gave one
  // run and two "already being synthesized" pop-ups once the upload arrived (known list; this
  // session's browser test on a busy machine).
  let held = false;
  // The request is made from the fields as they are when the upload arrives, so they are locked
  // while the press waits: what is spoken is what was there at the press. Gradio keeps each
  // value in its own state; disabling the elements only stops edits.
  const FIELDS = "#text textarea, #instruction textarea, #prompt_text textarea, #presets input, " +
                 "#speed input, #seed input, #speaker input";
  const lock = () => {
    const locked = Array.from(document.querySelectorAll(FIELDS)).filter((el) => !el.disabled);
    locked.forEach((el) => { el.disabled = true; });
    return () => locked.forEach((el) => { el.disabled = false; });
  };
  document.addEventListener("click", (e) => {
    const target = e.target instanceof Element ? e.target : null;
    if (!target) return;
    if (!window.isSecureContext && target.closest("#prompt_audio button[aria-label='Record audio']")) {
      note("microphone_note", TEXT.insecure, prompt());
      return;
    }
    if (target.closest("#prompt_audio .stop-button, #prompt_audio .stop-button-paused")) stoppedAt = Date.now();
    const generate = target.closest("#generate");
    // A file the page refused as too large (prompt_upload.js's note) never uploads: a press right
    // after ran in the built-in voice (helper-67). Dropped once, saying why, as for a refused upload.
    // The refusal's note stays in view (the dropped press's note points to it); it is only marked.
    const refusedNote = document.getElementById("upload_note");
    if (generate && refusedNote && !refusedNote.dataset.pressDropped && prompt() !== null &&
        prompt().querySelector("audio") === null) {
      e.preventDefault();
      e.stopImmediatePropagation();
      refusedNote.dataset.pressDropped = "yes";
      const el = note("uploading_note", TEXT.upload_failed, generate);
      setTimeout(() => el && el.remove(), 15000);
      return;
    }
    if (generate && !recording() && uploading()) {
      e.preventDefault();
      e.stopImmediatePropagation();
      if (held) return;
      held = true;
      shared.pressHeld = true;  // a reload meanwhile cuts it off (session_lost.js)
      const unlock = lock();
      const el = note("uploading_note", TEXT.uploading, generate);
      const started = Date.now();
      const later = () => {
        if (uploading() && Date.now() - started < 600000) return setTimeout(later, 250);
        held = false;
        shared.pressHeld = false;
        unlock();
        // A refused upload (too large, no room) leaves no prompt: the held press ran in the built-in
        // voice all the same (helper-61). It is dropped, and the note says why.
        const arrived = prompt() !== null && prompt().querySelector("audio") !== null;
        if (!arrived) {
          if (el) el.textContent = TEXT.upload_failed;
          return setTimeout(() => el && el.remove(), 15000);
        }
        if (el) el.remove();
        generate.click();
      };
      setTimeout(later, 250);
      return;
    }
    if (generate && recording()) {
      e.preventDefault();
      e.stopImmediatePropagation();
      const el = note("recording_note", TEXT.recording, generate);
      const gone = () => {
        if (recording()) return setTimeout(gone, 500);
        el.remove();
      };
      setTimeout(gone, 500);
    }
  }, true);
}
