(note) => {
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
                "监控数据也不再更新。请刷新页面重新登录（如需保留文字，请先复制）。",
    restored_running: "与服务器的连接中断，请求未完成，页面已在连接恢复后自动刷新（Gradio 的做法）。" +
                      "文字、设置和参考音频已恢复：请再次点击“生成”。",
    restored: "与服务器的连接中断，页面已在连接恢复后自动刷新（Gradio 的做法）。文字、设置和参考音频已恢复。",
    no_prompt: "参考音频无法恢复，请重新上传或录制。",
    prompt_back: "文字、设置和参考音频已恢复",
    no_prompt_back: "文字和设置已恢复",
    last_result: "下载上一次的结果。",
  } : {
    logged_out: "Your login has ended (you logged out in another tab, or it expired): this page can no longer " +
                "send or receive anything, and the monitor has stopped updating. Reload the page to log in " +
                "again (copy your text first if you want to keep it).",
    restored_running: "The connection to the server dropped while your request ran, so it did not finish, and " +
                      "the page reloaded once the server answered again (Gradio does so). Your text, settings " +
                      "and prompt audio are back: press Generate to run it again.",
    restored: "The connection to the server dropped, and the page reloaded once the server answered again " +
              "(Gradio does so). Your text, settings and prompt audio are back.",
    no_prompt: "The prompt audio could not be brought back: upload or record it again.",
    prompt_back: "Your text, settings and prompt audio are back",
    no_prompt_back: "Your text and settings are back",
    last_result: "Download the last result.",
  };
  // sessionStorage belongs to the origin, not to this app: another app on the same host (/other/
  // beside /tts/) or a second copy could write this entry (helper-76). It is kept per app path,
  // and what is read back is checked: links only to this app's own files, numbers as numbers.
  const BASE = location.pathname.replace(/[^/]*$/, "");
  const KEY = "cosyvoice_ui.connection_lost:" + BASE;
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

  // -- a dropped connection -----------------------------------------------------------------
  const running = () => document.querySelector("#stats .generating, #output_audio .generating") !== null;
  // Gradio may clear its "generating" state before it shows the pop-up (helper-73): a request seen
  // running in the last seconds counts.
  let lastRunning = 0;
  setInterval(() => { if (running()) lastRunning = Date.now(); }, 250);
  const keep = () => {
    if (sessionStorage.getItem(KEY)) return;
    const saved = {at: Date.now(), running: running() || Date.now() - lastRunning < 5000, fields: {}};
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
    if (link) saved.prompt = link.href;
    else if (document.querySelector("#prompt_audio audio")) saved.prompt = "";
    sessionStorage.setItem(KEY, JSON.stringify(saved));
  };
  new MutationObserver(() => {
    const lost = Array.from(document.querySelectorAll("[data-testid='toast-text'], [data-testid='toast-body']"))
      .some((el) => (el.textContent || "").includes("Connection to the server was lost"));
    if (lost) keep();
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
    let saved = null;
    try {
      saved = JSON.parse(sessionStorage.getItem(KEY) || "null");
    } catch (err) {  // not this page's entry
    }
    sessionStorage.removeItem(KEY);
    if (!saved || typeof saved !== "object" || !(Date.now() - saved.at < 15 * 60 * 1000)) return;
    const fields = saved.fields || {};
    for (const [name, selector] of Object.entries(FIELDS)) {
      const el = document.querySelector(selector);
      const value = fields[name];
      if (!el || typeof value !== "string" || el.value === value) continue;
      if (VALID[name] && !VALID[name].test(value)) continue;
      setValue(el, value);
    }
    let text = saved.running ? TEXT.restored_running : TEXT.restored;
    const noPrompt = () => { text = text.replace(TEXT.prompt_back, TEXT.no_prompt_back) + " " + TEXT.no_prompt; };
    if (saved.prompt && !ownFile(saved.prompt)) {
      noPrompt();
    } else if (saved.prompt) {
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
      } catch (err) {
        noPrompt();
      }
    } else if (saved.prompt === "") {
      noPrompt();
    } else {  // there was none
      text = text.replace(TEXT.prompt_back, TEXT.no_prompt_back);
    }
    const el = note("connection_note", text, document.getElementById("generate"));
    if (el && typeof saved.result === "string" && ownFile(saved.result)) {
      const link = document.createElement("a");
      link.href = saved.result;
      link.download = "";
      link.textContent = TEXT.last_result;
      el.append(" ", link);
    }
    if (el) setTimeout(() => el.remove(), 120000);
  };
  const ready = () => document.querySelector("#generate") && document.querySelector(FIELDS.text);
  const start = Date.now();
  const wait = () => {
    if (ready()) return restore();
    if (Date.now() - start < 30000) setTimeout(wait, 200);
  };
  if (sessionStorage.getItem(KEY)) wait();
}
