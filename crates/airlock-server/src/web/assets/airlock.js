// airlock's web inbox: the little script the pages use. Plain JS, no build step, loaded
// from this origin only (the Content-Security-Policy forbids inline script).
//
// - Every page: times in the reader's zone; "time left" kept current.
// - The inbox: cards arrive and leave live over the workspace event stream
//   (/web/events, from the event id the page was rendered at); keyboard shortcuts
//   j / k move, a approves, r focuses the reject reason.
// - An approval page: a banner when the approval is decided elsewhere meanwhile.
"use strict";

(function () {
  const ENDED = ["approval.decided", "approval.expired", "approval.cancelled"];

  function localTimes(root) {
    for (const node of root.querySelectorAll("time.local[datetime]")) {
      const at = new Date(node.getAttribute("datetime"));
      if (!isNaN(at)) {
        node.title = node.textContent;
        node.textContent = at.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
      }
    }
  }

  function timeLeft(deadline) {
    const seconds = Math.floor((deadline - Date.now()) / 1000);
    if (seconds <= 0) return "overdue";
    const minutes = Math.ceil(seconds / 60);
    if (minutes < 60) return minutes + " min left";
    if (minutes < 1440) {
      const rest = minutes % 60;
      return Math.floor(minutes / 60) + " h" + (rest ? " " + rest + " min" : "") + " left";
    }
    return Math.floor(minutes / 1440) + " d " + Math.floor((minutes % 1440) / 60) + " h left";
  }

  function refreshDeadlines() {
    for (const node of document.querySelectorAll("[data-deadline]")) {
      const deadline = Date.parse(node.dataset.deadline);
      if (isNaN(deadline)) continue;
      node.textContent = timeLeft(deadline);
      node.classList.toggle("soon", deadline - Date.now() < 10 * 60 * 1000);
    }
  }

  // The workspace stream from `after`; `handlers` maps event kinds to functions of the
  // event's data. Shows the connection's state in #live when the page has one.
  function stream(after, handlers) {
    const live = document.getElementById("live");
    const show = (state, text) => {
      // For tests and styles: whether this page's stream is connected.
      document.documentElement.dataset.stream = state;
      if (live) {
        live.dataset.state = state;
        live.textContent = text;
      }
    };
    const source = new EventSource("/web/events?after=" + encodeURIComponent(after || "0"));
    source.onopen = () => show("live", "live");
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        show("offline", "offline — reload the page");
      } else {
        show("connecting", "reconnecting…");
      }
    };
    for (const [kind, handle] of Object.entries(handlers)) {
      source.addEventListener(kind, (message) => {
        try {
          handle(JSON.parse(message.data).data || {}, kind);
        } catch (error) {
          console.error("airlock: bad event", kind, error);
        }
      });
    }
    window.addEventListener("pagehide", () => source.close());
    return source;
  }

  function inbox(root) {
    const cards = document.getElementById("cards");
    const empty = document.getElementById("empty");
    const count = document.getElementById("count");
    const gone = new Set();

    const all = () => Array.from(cards.querySelectorAll("article.card"));
    const selected = () => cards.querySelector("article.card.selected");
    const tally = () => {
      const n = all().length;
      if (count) count.textContent = String(n);
      if (empty) empty.hidden = n > 0;
    };
    const select = (card) => {
      for (const other of all()) other.classList.remove("selected");
      if (card) {
        card.classList.add("selected");
        card.focus({ preventScroll: true });
        card.scrollIntoView({ block: "nearest", behavior: "smooth" });
      }
    };

    // The card of a pending approval as the server renders it, or null.
    async function fetchCard(id) {
      const answer = await fetch("/web/cards/" + encodeURIComponent(id), {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      });
      if (!answer.ok) return null;
      const template = document.createElement("template");
      template.innerHTML = (await answer.text()).trim();
      return template.content.firstElementChild;
    }

    async function arrive(approval) {
      const id = approval.id;
      // A page of older requests takes no new arrivals: they are on the first page.
      if ("older" in root.dataset) return;
      if (!id || gone.has(id) || document.getElementById("card-" + id)) return;
      const card = await fetchCard(id);
      // It may have been decided, or have arrived twice, while it was fetched.
      if (!card || gone.has(id) || document.getElementById("card-" + id)) return;
      card.classList.add("arrived");
      cards.prepend(card);
      localTimes(card);
      refreshDeadlines();
      tally();
    }

    function leave(approval) {
      const id = approval.id;
      if (!id) return;
      gone.add(id);
      const card = document.getElementById("card-" + id);
      if (!card) return;
      const wasSelected = card.classList.contains("selected");
      const next = card.nextElementSibling || card.previousElementSibling;
      card.remove();
      if (wasSelected) select(next);
      tally();
    }

    // A vote under the two-person rule leaves the approval pending: its card is read
    // again, to show who voted.
    async function refresh(approval) {
      const id = approval.id;
      if (!id || gone.has(id) || !document.getElementById("card-" + id)) return;
      const card = await fetchCard(id);
      const shown = document.getElementById("card-" + id);
      if (!card || gone.has(id) || !shown) return;
      if (shown.classList.contains("selected")) card.classList.add("selected");
      shown.replaceWith(card);
      localTimes(card);
      refreshDeadlines();
    }

    stream(root.dataset.after, {
      "approval.requested": arrive,
      "approval.voted": refresh,
      "approval.decided": leave,
      "approval.expired": leave,
      "approval.cancelled": leave,
    });

    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target;
      if (target && target.closest && target.closest("input, textarea, select")) {
        if (event.key === "Escape") target.blur();
        return;
      }
      const list = all();
      if (list.length === 0) return;
      const current = selected();
      const index = current ? list.indexOf(current) : -1;
      switch (event.key) {
        case "j":
          select(list[Math.min(index + 1, list.length - 1)]);
          break;
        case "k":
          select(list[Math.max(index - 1, 0)]);
          break;
        case "a": {
          const button = current && current.querySelector('button[value="approve"]');
          if (!button) return;
          button.form.requestSubmit(button);
          break;
        }
        case "r": {
          const reason = current && current.querySelector("input.reason");
          if (!reason) return;
          reason.focus();
          break;
        }
        default:
          return;
      }
      event.preventDefault();
    });
  }

  // Invisible and reordering characters (controls, bidi marks and overrides, zero-width
  // and other default-ignorable ones) written as \uXXXX, as the server writes them.
  const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]|\ud82f[\udca0-\udca3]|\ud834[\udd73-\udd7a]|[\udb40-\udb43][\udc00-\udfff]/g;
  const visible = (text) =>
    text.replace(HIDDEN, (found) =>
      found.split("").map((unit) => "\\u" + unit.charCodeAt(0).toString(16).padStart(4, "0")).join(""));

  // "Approve with edits": the keys the typed arguments change, shown as they are typed.
  function editDiff() {
    const area = document.getElementById("edit-arguments");
    const out = document.getElementById("edit-diff");
    if (!area || !out) return;
    const original = JSON.parse(area.dataset.original || "{}");
    const show = () => {
      out.textContent = "";
      let edited;
      try {
        edited = JSON.parse(area.value);
      } catch (error) {
        out.className = "edit-diff invalid";
        out.textContent = "Not JSON: " + error.message;
        return;
      }
      if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
        out.className = "edit-diff invalid";
        out.textContent = "The arguments must be one JSON object.";
        return;
      }
      out.className = "edit-diff";
      const keys = Array.from(new Set([...Object.keys(original), ...Object.keys(edited)])).sort();
      const changed = keys.filter((key) => JSON.stringify(original[key]) !== JSON.stringify(edited[key]));
      if (changed.length === 0) {
        out.textContent = "No change yet.";
        return;
      }
      for (const key of changed) {
        const line = (sign, value) => {
          const row = document.createElement("div");
          row.className = sign === "-" ? "del" : "add";
          row.textContent = sign + " " + visible(key) + ": " + visible(JSON.stringify(value));
          out.appendChild(row);
        };
        if (key in original) line("-", original[key]);
        if (key in edited) line("+", edited[key]);
      }
    };
    area.addEventListener("input", show);
    show();
  }

  function approvalPage(root) {
    editDiff();
    const id = root.dataset.approvalId;
    const banner = document.getElementById("live-banner");
    const ended = (approval, kind) => {
      if (approval.id !== id || !banner) return;
      const what = kind === "approval.decided" ? approval.status : kind.split(".")[1];
      banner.textContent =
        "This approval was just " + what + " elsewhere. Reload the page to see it; a decision from this page will be refused.";
      banner.hidden = false;
    };
    const handlers = {};
    for (const kind of ENDED) handlers[kind] = ended;
    stream(root.dataset.after, handlers);
  }

  document.addEventListener("DOMContentLoaded", () => {
    localTimes(document);
    refreshDeadlines();
    setInterval(refreshDeadlines, 20000);
    const inboxRoot = document.getElementById("inbox");
    if (inboxRoot) inbox(inboxRoot);
    const approvalRoot = document.getElementById("approval");
    if (approvalRoot && approvalRoot.dataset.approvalId) approvalPage(approvalRoot);
  });
})();
