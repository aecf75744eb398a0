() => {
  // Gradio's upload shows a refused upload as "HTTP 507: " and the server's JSON body, so the
  // pop-up read 'HTTP 507: {"detail": "The server's disk is full ..."}' (helper-55's and later
  // known lists). The pop-up's text is replaced with the message alone.
  const REFUSAL = /^\s*HTTP (\d{3}): (\{[\s\S]*\})\s*$/;
  const plain = (el) => {
    const m = REFUSAL.exec(el.textContent || "");
    if (!m) return;
    let detail;
    try {
      detail = JSON.parse(m[2]).detail;
    } catch (err) {
      return;
    }
    if (typeof detail === "string" && detail) el.textContent = detail;
  };
  new MutationObserver(() => {
    document.querySelectorAll("[data-testid='toast-text']").forEach(plain);
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}
