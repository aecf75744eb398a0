(note, shared) => {
  // Two ways the page stopped working without a word of why (helper-71):
  // - A dropped connection (a phone between cells, 1.5 s offline) made Gradio reload the page as
  //   soon as the server answered again: the request was stopped ("abandoned" in the ledger) and
  //   the text, settings and prompt audio were gone. What the visitor had is kept in this tab's
  //   sessionStorage when Gradio says the connection was lost, and put back after its reload.
  // - Under --auth, once the login ended (logged out in another tab, cookie expired) every call
  //   answered 401: Generate showed bare "Error" badges, an upload was refused in silence while
  //   the old prompt stayed shown, and the monitor froze. The first 401 says so, once.
  const zh = (navigator.language || "").toLowerCase().startsWith("zh");
  const TEXT = zh ? {
    logged_out: "登录已失效（可能在其他标签页中退出了登录，或登录已过期）：此页面无法再发送或接收任何内容，" +
                "监控数据也不再更新。请刷新页面重新登录（文字和设置会在此标签页中保留 15 分钟）。",
    restored_running: "请求等待或进行期间与服务器的连接中断，请求未在此页面完成（服务器已在合成的部分会完成，但无法在此显示），" +
                      "页面已在连接恢复后自动刷新（Gradio 的做法）。" +
                      "文字、设置和参考音频已恢复：请再次点击“生成”。",
    restored: "与服务器的连接中断，页面已在连接恢复后自动刷新（Gradio 的做法）。文字、设置和参考音频已恢复。",
    left_running: "请求等待或进行期间页面被刷新或离开，因此请求未在此页面完成（页面离开后服务器会停止它；" +
                  "已在合成的部分会完成，但无法在此显示）。" +
                  "文字、设置和参考音频已恢复：请再次点击“生成”。",
    left: "页面已刷新或重新打开。文字、设置和参考音频已恢复。",
    no_prompt: "参考音频无法恢复，请重新上传或录制（没有参考音频时，“生成”会使用内置声音）。",
    prompt_back: "文字、设置和参考音频已恢复",
    prompt_coming: "文字和设置已恢复，参考音频正在重新上传（“生成”会等待上传完成）",
    no_prompt_back: "文字和设置已恢复",
    last_result: "下载上一次的结果。",
    result_gone: "上一次的结果已不在服务器上（服务器已重启，或文件已过期）。",
  } : {
    logged_out: "Your login has ended (you logged out in another tab, or it expired): this page can no longer " +
                "send or receive anything, and the monitor has stopped updating. Reload the page to log in " +
                "again (your text and settings are kept in this tab for 15 minutes).",
    // "did not finish" alone was untrue for a request on its last part: the server finished it,
    // recorded ok, and nothing could show it (helper-96).
    restored_running: "The connection to the server dropped while your request was waiting or running, so it " +
                      "did not finish on this page (a part the server was already speaking is finished, but " +
                      "cannot be shown), and the page reloaded once the server answered again (Gradio does so). " +
                      "Your text, settings and prompt audio are back: press Generate to run it again.",
    restored: "The connection to the server dropped, and the page reloaded once the server answered again " +
              "(Gradio does so). Your text, settings and prompt audio are back.",
    left_running: "The page was reloaded or left while your request was waiting or running, so it did not " +
                  "finish on this page (the server stops a request whose page has gone; a part it was already " +
                  "speaking is finished, but cannot be shown). Your text, settings and prompt " +
                  "audio are back: press Generate to run it again.",
    left: "The page was reloaded or opened again. Your text, settings and prompt audio are back.",
    no_prompt: "The prompt audio could not be brought back: upload or record it again (without it, Generate " +
               "speaks in the built-in voice).",
    prompt_back: "Your text, settings and prompt audio are back",
    prompt_coming: "Your text and settings are back, and the prompt audio is being uploaded again (Generate " +
                   "waits for it)",
    no_prompt_back: "Your text and settings are back",
    last_result: "Download the last result.",
    result_gone: "The last result is no longer on the server (it was restarted, or the file expired).",
  };
  // sessionStorage belongs to the origin, not to this app: another app on the same host (/other/
  // beside /tts/) or a second copy could write this entry (helper-76). It is kept per app path,
  // and what is read back is checked: links only to this app's own files, numbers as numbers.
  const BASE = location.pathname.replace(/[^/]*$/, "");
  const KEY = "cosyvoice_ui.connection_lost:" + BASE;
  // A frame in another site's page (--frame-ancestors) may be refused storage: each use threw a
  // SecurityError, and the script's end with it (helper-101). Then nothing is kept across a reload.
  const storage = (() => {
    try {
      window.sessionStorage.getItem(KEY);
      return window.sessionStorage;
    } catch (err) {
      return {getItem: () => null, setItem: () => {}, removeItem: () => {}};
    }
  })();
  const FIELDS = {text: "#text textarea", instruction: "#instruction textarea", prompt_text: "#prompt_text textarea",
                  speed: "#speed input[type=number]", seed: "#seed input"};
  const VALID = {speed: /^\d{1,3}(\.\d{1,6})?$/, seed: /^-?\d{1,20}$/};
  const ownFile = (href) => {
    try {
      const url = new URL(href, location.href);
      return url.origin === location.origin && url.pathname.startsWith(BASE + "gradio_api/file=");
    } catch (err) {
      return false;
    }
  };

  // -- the login ended ----------------------------------------------------------------------
  let toldLoggedOut = false;
  const fetched = window.fetch;
  window.fetch = async (...args) => {
    const response = await fetched(...args);
    if (response.status === 401 && !toldLoggedOut) {
      const url = String(args[0] && args[0].url ? args[0].url : args[0]);
      if (new URL(url, location.href).origin === location.origin) {
        toldLoggedOut = true;
        const el = note("login_ended", TEXT.logged_out, document.getElementById("title"));
        if (el) el.style.cssText += ";position:sticky;top:0;z-index:1000";
      }
    }
    return response;
  };

  // -- a dropped connection, a reload, a page left -------------------------------------------
  // Also kept when the tab reloads or goes to another page (F5, a link, Back): that ended a
  // running request too, and the note said the connection had dropped; a page that restored the
  // entry and was left at once (Back) used it up, and the page gone back to was blank (helper-78).
  // Waiting in Gradio's queue shows its timer (.eta-bar, .progress-text) before "generating" (helper-79).
  const running = () => document.querySelector(
    "#stats .generating, #output_audio .generating, #stats .eta-bar, #stats .progress-text") !== null;
  // Gradio may clear its "generating" state before it shows the pop-up (helper-73): a request seen
  // running in the last seconds counts, unless an answer came after it: its result, or its refusal
  // (a reload after either said the request "did not finish"; helpers 79, 81). A lost connection
  // also marks the outputs as failed, together with its pop-up: not an answer.
  const lostShown = () => Array.from(document.querySelectorAll("[data-testid='toast-text'], [data-testid='toast-body']"))
    .some((el) => (el.textContent || "").includes("Connection to the server was lost"));
  const answered = () => /audio_s/.test((document.querySelector("#stats") || {}).innerText || "") ||
    (document.querySelector("#stats .error") !== null && !lostShown());
  const uploading = () => Array.from(document.querySelectorAll("#prompt_audio .uploading, #prompt_audio .progress-bar"))
    .some((el) => el.offsetParent !== null);
  let lastRunning = 0;
  let lastAnswer = 0;
  // What this page's own restore brought back and has not yet made its own: a second reload in a
  // row lost the prompt still being uploaded and the word that a request was cut off (helper-83).
  let carried = null;
  let hadAnswer = false;
  // Gradio's "generating" lingers a moment after the answer (a reload 0.25 s after a result).
  const stillRunning = () => running() && Date.now() - lastAnswer > 1000;
  const look = () => {  // on every change of the page, and every 250 ms
    const has = answered();
    if (has && !hadAnswer) lastAnswer = Date.now();
    hadAnswer = has;
    if (stillRunning()) {
      lastRunning = Date.now();
      if (carried && carried.until) {  // a new request after the restore: the note's is over
        // Its "did not finish" stayed beside the new request's result (helper-86).
        if (carried.running) document.getElementById("connection_note")?.remove();
        carried.running = false;
      }
    }
    if (carried && carried.dispatchedAt && shared.restoring &&
        Date.now() - carried.dispatchedAt > 2000 && !uploading()) {
      shared.restoring = false;  // the upload is over, arrived or not
    }
    if (carried && carried.prompt && document.querySelector("#prompt_audio a[href*='/file=']")) {
      carried.prompt = undefined;
      shared.restoring = false;
      // Only now is the prompt back: on a slow link the note said so 16 s before it was (helper-86).
      const el = document.getElementById("connection_note");
      if (el && carried.whenBack && el.firstChild) el.firstChild.nodeValue = carried.whenBack;
      carried.whenBack = undefined;
    }
  };
  setInterval(look, 250);
  let leaving = false;
  const read = () => {  // the saved entry, or null (none, or one that is not this page's)
    try {
      const saved = JSON.parse(storage.getItem(KEY) || "null");
      return saved && typeof saved === "object" ? saved : null;
    } catch (err) {
      return null;
    }
  };
  const keep = (cause) => {
    if (storage.getItem(KEY)) return;
    look();
    // A Generate held for the prompt's upload (microphone.js) was cut off too: the note said
    // nothing of it (helper-94).
    const cutOff = stillRunning() || shared.pressHeld ||
      (Date.now() - lastRunning < 5000 && lastAnswer < lastRunning);
    const saved = {at: Date.now(), cause, running: cutOff, fields: {}};
    // A result on the page is gone after the reload; its file stays on the server for a while.
    const result = document.querySelector("#output_audio a[href*='/file=']");
    if (result) saved.result = result.href;
    for (const [name, selector] of Object.entries(FIELDS)) {
      const el = document.querySelector(selector);
      if (el) saved.fields[name] = el.value;
    }
    // The prompt as the server holds it (an upload or a finished recording; its download link):
    // fetched again after the reload, when the server answers.
    const link = document.querySelector("#prompt_audio a[href*='/file=']");
    // One still uploading is gone too, and the note says so (it was silent about it; helper-86).
    if (link) saved.prompt = link.href;
    else if (document.querySelector("#prompt_audio audio") || uploading()) saved.prompt = "";
    if (carried) {
      // Only for a reload soon after the restore: later ones said again and again that a request
      // had been cut off, though none ran (helper-84).
      saved.running = saved.running || (carried.running && Date.now() < carried.until);
      if (!saved.prompt && carried.prompt) saved.prompt = carried.prompt;  // still being uploaded
      if (!saved.result && carried.result) saved.result = carried.result;
    }
    const typed = ["text", "instruction", "prompt_text"].some((name) => saved.fields[name]);
    if (cause === "left" && !saved.running && !typed && saved.prompt === undefined && !saved.result) return;
    storage.setItem(KEY, JSON.stringify(saved));
  };
  // Gradio's own beforeunload ends its stream first, so its "connection lost" pop-up comes a
  // moment before ours runs (1 ms here): an entry that new is this page being left. (After a real
  // drop Gradio reloads only once the server answers again, seconds later.)
  const leave = () => {
    leaving = true;
    const saved = read();
    if (saved && saved.cause === "dropped" && Date.now() - saved.at < 300) {
      storage.setItem(KEY, JSON.stringify({...saved, cause: "left"}));
    }
    keep("left");
  };
  window.addEventListener("beforeunload", leave);
  window.addEventListener("pagehide", leave);
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) {  // back from the browser's cache, as it was: nothing to restore
      leaving = false;
      storage.removeItem(KEY);
    }
  });
  new MutationObserver(() => {
    look();
    if (lostShown()) keep(leaving ? "left" : "dropped");
  }).observe(document.body, {childList: true, subtree: true, characterData: true});

  const setValue = (el, value) => {
    // Gradio's fields follow their input events; a plain assignment would not reach its state.
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, "value").set.call(el, value);
    el.dispatchEvent(new Event("input", {bubbles: true}));
    el.dispatchEvent(new Event("change", {bubbles: true}));
    el.dispatchEvent(new Event("blur", {bubbles: true}));
  };
  const restore = async () => {
    const saved = read();
    if (!saved || !(Date.now() - saved.at < 15 * 60 * 1000)) {
      storage.removeItem(KEY);
      return;
    }
    const fields = saved.fields || {};
    for (const [name, selector] of Object.entries(FIELDS)) {
      const el = document.querySelector(selector);
      const value = fields[name];
      if (!el || typeof value !== "string" || el.value === value) continue;
      if (VALID[name] && !VALID[name].test(value)) continue;
      setValue(el, value);
    }
    const left = saved.cause === "left";
    let text = saved.running ? (left ? TEXT.left_running : TEXT.restored_running) : (left ? TEXT.left : TEXT.restored);
    const noPrompt = () => { text = text.replace(TEXT.prompt_back, TEXT.no_prompt_back) + " " + TEXT.no_prompt; };
    const say = (words) => note("connection_note", words, document.getElementById("generate"));
    if (saved.prompt && !ownFile(saved.prompt)) {
      noPrompt();
    } else if (saved.prompt) {
      carried = {running: !!saved.running, prompt: saved.prompt, until: Date.now() + 10000, whenBack: text};
      // Said at once, and Generate waits (microphone.js) until the prompt is back: on a slow link
      // its download took 20 s with no note, and a press meanwhile spoke in the built-in voice
      // (helper-90). The flag ends once the upload is done or has failed (look).
      shared.restoring = true;
      say(text.replace(TEXT.prompt_back, TEXT.prompt_coming));
      try {
        const response = await fetch(saved.prompt);
        if (!response.ok) throw new Error(String(response.status));
        const blob = await response.blob();
        const name = decodeURIComponent(new URL(saved.prompt).pathname.split("/").pop() || "prompt.wav");
        const input = document.querySelector("#prompt_audio input[type=file]");
        if (!input) throw new Error("no upload field");
        const files = new DataTransfer();
        files.items.add(new File([blob], name, {type: blob.type || "audio/wav"}));
        input.files = files.files;
        input.dispatchEvent(new Event("change", {bubbles: true}));
        carried.dispatchedAt = Date.now();
        text = text.replace(TEXT.prompt_back, TEXT.prompt_coming);
      } catch (err) {
        // A reload during the download aborts it: this page is going, and the entry it restores
        // from stays for the next one (taking it as failed lost the prompt: F5, F5 in a row).
        if (leaving) return;
        carried.prompt = carried.whenBack = undefined;
        shared.restoring = false;
        noPrompt();
      }
    } else if (saved.prompt === "") {
      noPrompt();
    } else {  // there was none
      text = text.replace(TEXT.prompt_back, TEXT.no_prompt_back);
    }
    carried = {...(carried || {}), running: !!saved.running, until: Date.now() + 10000};
    // The upload may have ended while the prompt was fetched: look() has said so already.
    const el = carried.prompt || !carried.whenBack ? say(text) : document.getElementById("connection_note");
    if (el && typeof saved.result === "string" && ownFile(saved.result)) {
      // Gone after a restart of the server (a clean stop empties its folder) or --temp-file-ttl:
      // the link was a 404 (helper-81).
      const there = await fetch(saved.result, {headers: {Range: "bytes=0-0"}}).then((r) => r.ok, () => false);
      if (there) {
        carried.result = saved.result;
        const link = document.createElement("a");
        link.href = saved.result;
        link.download = "";
        link.textContent = TEXT.last_result;
        el.append(" ", link);
      } else {
        el.append(" " + TEXT.result_gone);
      }
    }
    if (el) setTimeout(() => el.remove(), 120000);
    // Only now: a page left before its restore was done passes the whole entry on.
    if (!leaving) storage.removeItem(KEY);
  };
  const ready = () => document.querySelector("#generate") && document.querySelector(FIELDS.text);
  const start = Date.now();
  const wait = () => {
    if (ready()) return restore();
    if (Date.now() - start < 30000) setTimeout(wait, 200);
  };
  if (storage.getItem(KEY)) wait();
}
