// engram-memory reference review page (docs/review.md). Plain JavaScript, no build step.
// Rules a host copying it must keep:
//  - the maintainer token lives in this closure only: never in storage, a cookie or a URL;
//  - every value from the API is rendered with textContent, never parsed as HTML;
//  - the page loads nothing but itself (the Content-Security-Policy forbids the rest);
//  - it lists and acts only on the workspaces the token covers (GET /host/whoami): the
//    server refuses the others anyway, the page just never offers them.
"use strict";

(() => {
  const API = "/host";          // a host serving the routes elsewhere changes this line
  const REFRESH_MS = 5000;
  const MAX_PAGES = 10;         // at most 10 pages of 100 per list and refresh

  let token = null;             // the maintainer token, in memory only
  let workspace = "";
  let coverage = null;          // what the token covers (GET /host/whoami), or null
  let refreshTimer = null;
  const outcomes = new Map();   // item key -> last decision outcome text (survives refresh)
  const contents = new Map();   // candidate key -> payload read on request (memory only)

  const $ = (id) => document.getElementById(id);

  function setStatus(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  async function call(method, path, body) {
    const headers = { "Authorization": "Bearer " + token, "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(API + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
    });
    let payload = null;
    try { payload = await response.json(); } catch (_) { payload = null; }
    return { status: response.status, payload };
  }

  function errorText(result) {
    const error = result.payload && result.payload.error;
    const code = error && typeof error.code === "string" ? error.code : "HTTP " + result.status;
    const message = error && typeof error.message === "string" ? error.message : "";
    return message ? code + ": " + message : code;
  }

  async function listAll(path, query) {
    const items = [];
    let cursor = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const params = new URLSearchParams(query);
      params.set("limit", "100");
      if (cursor) params.set("cursor", cursor);
      const result = await call("GET", path + "?" + params.toString());
      if (result.status !== 200) throw new Error(errorText(result));
      items.push(...result.payload.items);
      cursor = result.payload.nextCursor;
      if (!cursor) break;
    }
    return items;
  }

  function covers(id) {
    return coverage !== null && (coverage.tenantWide || coverage.workspaces.includes(id));
  }

  // The token's scope as the service reads it (never decoded here: the page trusts only
  // what the server verified). Shown, and it decides which workspaces can be chosen.
  async function learnCoverage() {
    const result = await call("GET", "/whoami");
    if (result.status !== 200) throw new Error(errorText(result));
    const found = result.payload;
    coverage = {
      tenantId: String(found.tenantId),
      tenantWide: found.tenantWide === true,
      workspaces: Array.isArray(found.workspaces) ? found.workspaces.map(String) : [],
    };
    showCoverage();
  }

  function showCoverage() {
    const line = $("coverage");
    const choice = $("workspace-choice");
    const scoped = coverage !== null && !coverage.tenantWide;
    line.hidden = coverage === null;
    $("workspace-typed").hidden = scoped;
    $("workspace").disabled = scoped;
    $("workspace-listed").hidden = !scoped;
    if (coverage === null) {
      line.textContent = "";
      choice.replaceChildren();
    } else if (!scoped) {
      line.textContent = "This token is tenant-wide: it covers every workspace of tenant " +
        coverage.tenantId + ".";
      choice.replaceChildren();
    } else {
      const ids = coverage.workspaces;
      line.textContent = "This token covers " +
        (ids.length === 1 ? "workspace " : ids.length + " workspaces: ") + ids.join(", ") +
        " (tenant " + coverage.tenantId + ") and no other.";
      choice.replaceChildren(...ids.map((id) => {
        const option = el("option", "", id);
        option.value = id;
        return option;
      }));
      const typed = $("workspace").value.trim();
      choice.value = ids.includes(typed) ? typed : ids[0];
    }
  }

  function chosenWorkspace() {
    if (coverage === null) return "";
    return coverage.tenantWide ? $("workspace").value.trim() : $("workspace-choice").value;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function details(pairs) {
    const list = el("dl");
    for (const [name, value] of pairs) {
      list.append(el("dt", "", name), el("dd", "", value === "" ? "—" : value));
    }
    return list;
  }

  function when(ms) {
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  function remaining(expiresAtMs) {
    const left = Math.floor((expiresAtMs - Date.now()) / 1000);
    if (left <= 0) return "expired";
    const minutes = Math.floor(left / 60);
    return (minutes ? minutes + " min " : "") + (left % 60) + " s left";
  }

  function tick() {
    for (const item of document.querySelectorAll("li[data-expires-at-ms]")) {
      const expiresAtMs = Number(item.dataset.expiresAtMs);
      const expired = expiresAtMs <= Date.now();
      item.querySelector(".ttl").textContent = remaining(expiresAtMs);
      if (expired && !item.classList.contains("expired")) {
        item.classList.add("expired");
        for (const button of item.querySelectorAll("button")) button.disabled = true;
      }
    }
  }

  function decisionButtons(item, choices, decide) {
    const actions = el("div", "actions");
    for (const [label, decision, className] of choices) {
      const button = el("button", className, label);
      button.type = "button";
      button.dataset.decision = decision;
      button.addEventListener("click", async () => {
        for (const b of actions.querySelectorAll("button")) b.disabled = true;
        await decide(decision);
      });
      actions.append(button);
    }
    item.append(actions);
  }

  function outcomeLine(item, key) {
    const line = el("p", "outcome", outcomes.get(key) || "");
    item.append(line);
    return line;
  }

  function renderConfirmation(c) {
    const key = "conf:" + c.elicitationRef;
    const where = workspace;      // the item's workspace, whatever is chosen later
    const item = el("li", "item");
    item.dataset.ref = c.elicitationRef;
    item.dataset.expiresAtMs = String(c.expiresAtMs);
    item.append(el("div", "title", c.capability + " " + (c.target || "(new capture)")));
    item.append(details([
      ["reason", c.reason], ["for agent principal", c.principal],
      ["requested by", c.requestedBy], ["requested at", when(c.createdAtMs)],
      ["expires at", when(c.expiresAtMs)], ["state", c.state],
      ["reference", c.elicitationRef],
    ]));
    const ttl = el("p", "ttl", remaining(c.expiresAtMs));
    item.append(ttl);
    const line = outcomeLine(item, key);
    decisionButtons(item, [["Approve", "approve", "approve"], ["Reject", "reject", "reject"]],
      async (decision) => {
        const result = await call("POST",
          "/confirmations/" + encodeURIComponent(c.elicitationRef) + "/decision",
          { workspace_id: where, decision, approver: $("approver").value });
        const text = result.status === 200
          ? "Decision recorded: " + result.payload.state + " — give the agent reference " +
            c.elicitationRef
          : "Not decided: " + errorText(result);
        outcomes.set(key, text);
        line.textContent = text;
        await refresh();
      });
    return item;
  }

  // The payload as the agent captured it: every string shown as text, never as markup.
  function renderContent(target, payload) {
    const components = Array.isArray(payload.components) ? payload.components : [];
    const list = el("dl", "components");
    for (const component of components) {
      const name = String(component.kind || "component") +
        (component.component_id === payload.primary_component_id ? " (primary)" : "");
      list.append(el("dt", "", name), el("dd", "", String(component.text ?? "")));
    }
    const citations = Array.isArray(payload.citations) ? payload.citations : [];
    for (const citation of citations) {
      const locator = citation.locator ? String(citation.locator.value ?? "") : "";
      list.append(el("dt", "", "cites"), el("dd", "", String(citation.source_ref ?? "") +
        (locator ? " — " + locator : "")));
    }
    list.append(el("dt", "", "purpose"), el("dd", "", String(payload.purpose_ref ?? "")));
    target.replaceChildren(list);
  }

  function renderCandidate(c) {
    const key = "cand:" + c.candidateId;
    const where = workspace;
    const item = el("li", "item");
    item.dataset.candidate = c.candidateId;
    item.append(el("div", "title", "candidate " + c.candidateId));
    item.append(details([
      ["captured by", c.principal], ["captured at", when(c.capturedAtMs)],
      ["held at", when(c.heldAtMs)], ["policy", c.policyId + " " + c.policyVersion],
      ["payload digest", c.payloadDigest],
    ]));
    const content = el("div", "content");
    const show = el("button", "", "Show content");
    show.type = "button";
    show.dataset.show = "content";
    show.addEventListener("click", async () => {
      show.disabled = true;
      const result = await call("GET", "/adjudications/" + encodeURIComponent(c.candidateId) +
        "?" + new URLSearchParams({ workspace_id: where }).toString());
      if (result.status !== 200) {
        content.replaceChildren(el("p", "outcome", "Could not read: " + errorText(result)));
        show.disabled = false;
        return;
      }
      contents.set(key, result.payload.payload);
      renderContent(content, result.payload.payload);
    });
    if (contents.has(key)) renderContent(content, contents.get(key));
    item.append(show, content);
    const line = outcomeLine(item, key);
    decisionButtons(item, [["Accept", "accept", "approve"], ["Reject", "reject", "reject"]],
      async (decision) => {
        const result = await call("POST", "/adjudications/" + encodeURIComponent(c.candidateId),
          { workspace_id: where, decision, approver: $("approver").value });
        const text = result.status === 200
          ? "Decided: " + result.payload.outcome.status
          : "Not decided: " + errorText(result);
        outcomes.set(key, text);
        line.textContent = text;
        await refresh();
      });
    return item;
  }

  function fill(listId, countId, items, render, emptyText) {
    const list = $(listId);
    list.replaceChildren(...(items.length ? items.map(render)
      : [el("li", "empty", emptyText)]));
    $(countId).textContent = "(" + items.length + ")";
  }

  async function refresh() {
    if (token === null) return;
    if (!covers(workspace)) {
      $("confirmations").replaceChildren();
      $("adjudications").replaceChildren();
      setStatus("This token does not cover workspace " + workspace + ".", true);
      return;
    }
    try {
      const [pending, held] = await Promise.all([
        listAll("/confirmations", { workspace_id: workspace, state: "pending" }),
        listAll("/adjudications", { workspace_id: workspace }),
      ]);
      fill("confirmations", "confirmations-count", pending, renderConfirmation,
        "No confirmation waits.");
      fill("adjudications", "adjudications-count", held, renderCandidate,
        "No candidate waits.");
      tick();
      setStatus("Workspace " + workspace + ": updated " + new Date().toLocaleTimeString() +
        " (every " + REFRESH_MS / 1000 + " s).", false);
    } catch (error) {
      setStatus("Could not list: " + error.message, true);
    }
  }

  function forgetToken() {
    token = null;
    coverage = null;
    showCoverage();
    contents.clear();
    clearInterval(refreshTimer);
    refreshTimer = null;
    $("forget-token").disabled = true;
    $("confirmations").replaceChildren();
    $("adjudications").replaceChildren();
    setStatus("Token forgotten. Paste a maintainer token to begin.", false);
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("connect").addEventListener("submit", async (event) => {
      event.preventDefault();
      const pasted = $("token").value.trim();
      $("token").value = "";          // the field does not keep it either
      if (pasted) {
        token = pasted;
        coverage = null;
        contents.clear();
        try {
          await learnCoverage();
        } catch (error) {
          token = null;
          clearInterval(refreshTimer);
          refreshTimer = null;
          showCoverage();
          $("forget-token").disabled = true;
          $("confirmations").replaceChildren();
          $("adjudications").replaceChildren();
          setStatus("Could not read what the token covers: " + error.message, true);
          return;
        }
      }
      workspace = chosenWorkspace();
      if (token === null || !workspace) return;
      $("forget-token").disabled = false;
      clearInterval(refreshTimer);
      refreshTimer = setInterval(refresh, REFRESH_MS);
      await refresh();
    });
    $("forget-token").addEventListener("click", forgetToken);
    $("workspace-choice").addEventListener("change", async () => {
      if (token === null) return;
      workspace = chosenWorkspace();
      await refresh();
    });
    setInterval(tick, 1000);
  });
})();
