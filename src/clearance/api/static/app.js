// Clearance browser UI: progressive enhancement of the ask form.
//
// Without this script the form posts and the server renders the answer page. With it, the
// question is posted with `Accept: text/event-stream` and the answer streams in: each
// `sentence` event is a sentence that has already passed every check on the server, shown as
// text (never as markup); the final `rendered` event carries the answer as the server
// rendered it (escaped by the template engine) and replaces the streamed text.
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  const section = document.getElementById("answer");
  if (!form || !section || !window.fetch || !window.TextDecoder) {
    return;
  }
  const button = document.getElementById("ask-button");

  function show(message) {
    section.replaceChildren();
    const p = document.createElement("p");
    p.className = "notice error";
    p.setAttribute("role", "alert");
    p.textContent = message;
    section.appendChild(p);
  }

  function parse(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) {
        name = line.slice(6).trim();
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).trimStart());
      }
    }
    return { name: name, data: data.length ? JSON.parse(data.join("\n")) : null };
  }

  form.addEventListener("submit", async function (e) {
    e.preventDefault();
    const body = new URLSearchParams(new FormData(form));
    button.disabled = true;
    section.replaceChildren();
    section.setAttribute("aria-busy", "true");
    const live = document.createElement("p");
    live.className = "streaming";
    live.id = "streaming";
    live.textContent = "Looking in the sources you may read…";
    section.appendChild(live);
    let started = false;
    let sentences = 0;
    try {
      const reply = await fetch("/ask", {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: {
          Accept: "text/event-stream",
          "X-CSRF-Token": form.elements.csrf.value,
        },
      });
      if (!reply.body) {
        throw new Error("no body");
      }
      const reader = reply.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const item = parse(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (item.name === "sentence") {
            if (!started) {
              live.textContent = "";
              started = true;
            }
            live.appendChild(document.createTextNode(item.data.text));
            sentences += 1;
          } else if (item.name === "rendered") {
            section.innerHTML = item.data.html; // server-rendered, escaped markup
            section.dataset.streamedSentences = String(sentences);
          } else if (item.name === "error") {
            show(item.data.message);
            if (reply.status === 401) {
              window.location.assign("/signin");
            }
          }
        }
      }
    } catch (err) {
      show("The answer could not be loaded. Please try again.");
    } finally {
      button.disabled = false;
      section.removeAttribute("aria-busy");
    }
  });
})();
