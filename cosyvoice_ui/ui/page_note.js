(id, text, after) => {
  // A note under a control, as text (never HTML); created once per id, its text replaced after.
  // Shared by prompt_upload.js and microphone.js: Gradio's pop-ups cannot be raised from the page.
  let el = document.getElementById(id);
  if (!el) {
    if (!after) return null;
    el = document.createElement("div");
    el.id = id;
    el.setAttribute("role", "alert");
    el.style.cssText = "margin:6px 0;padding:8px 10px;border-radius:6px;border:1px solid #d97706;" +
                       "background:#fffbeb;color:#92400e;font-size:14px;line-height:1.4";
    after.insertAdjacentElement("afterend", el);
  }
  el.textContent = text;
  return el;
}
