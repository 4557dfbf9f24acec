// agent-s live view: frames, the step log and the run's buttons. Every request carries the
// page's token; the server refuses any request without it.
"use strict";
(function () {
  const token = document.body.dataset.token;
  const url = (path) => path + "?token=" + encodeURIComponent(token);
  const canvas = document.getElementById("screen");
  const context = canvas.getContext("2d");
  const view = {
    frames: 0, state: "", acting: false, steps: [], plan: [], result: null, inputs: 0,
  };
  window.agentView = view;  // read by tests and by anyone curious in the console
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  async function frames() {
    for (;;) {
      try {
        const reply = await fetch(url("/frame.jpg"), { cache: "no-store" });
        if (reply.ok) {
          const bitmap = await createImageBitmap(await reply.blob());
          if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
            canvas.width = bitmap.width;
            canvas.height = bitmap.height;
          }
          context.drawImage(bitmap, 0, 0);
          bitmap.close();
          view.frames += 1;
        }
      } catch (err) {
        // the run ended and the server with it, or a frame was lost: try again
      }
      await sleep(view.state === "taken_over" ? 150 : 300);
    }
  }

  function text(tag, content, cls) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (cls) node.className = cls;
    return node;
  }

  function showState(state, reason) {
    view.state = state;
    const badge = document.getElementById("state");
    badge.textContent = state.replace("_", " ");
    badge.className = "state " + state;
    document.body.className = state;
    document.getElementById("reason").textContent = reason || "";
    const enabled = {
      pause: state === "running",
      resume: state === "paused",
      take_over: state === "running" || state === "paused",
      hand_back: state === "taken_over",
      stop: state !== "stopped" && !view.result,
    };
    for (const [id, on] of Object.entries(enabled)) document.getElementById(id).disabled = !on;
    if (state === "taken_over") canvas.focus();
  }

  function logItem(item) {
    document.getElementById("log").appendChild(item);
    item.scrollIntoView({ block: "end" });
  }

  function showStep(step) {
    view.steps.push(step);
    const item = document.createElement("li");
    if (step.subtask) item.appendChild(text("span", "[" + step.subtask + "] ", "subtask"));
    item.appendChild(text("span", "#" + step.step + " " + step.action));
    for (const g of step.grounding) {
      const where = g.point ? " (" + g.point[0] + ", " + g.point[1] + ") via " + g.grounder
        : " not found (" + g.grounder + ")";
      item.appendChild(text("span", where, "point"));
    }
    if (step.detail) item.appendChild(text("div", step.detail, "bad"));
    logItem(item);
    document.getElementById("cost").textContent =
      step.tokens + " tokens, $" + Number(step.cost_usd).toFixed(4);
  }

  // a planned run: each plan with its subtasks (their status kept up to date), each subtask
  // as it starts and ends, each check, switch and replan (agent_s/view/planlog.py)
  const subtaskLines = new Map();  // subtask id -> its line in the latest plan's list
  function planLine(event) {
    switch (event.kind) {
      case "plan":
      case "replan":
        if (!event.accepted) return [event.kind + " refused: " + event.problem, "bad"];
        if (!event.feasible) return [event.kind + ": infeasible: " + event.reason, "bad"];
        return [event.kind + ": " + event.subtasks.length
          + (event.subtasks.length === 1 ? " subtask" : " subtasks"), "plan"];
      case "subtask":
        return ["subtask " + event.subtask + " " + event.status
          + (event.detail ? " (" + event.detail + ")" : ""),
        event.status === "done" ? "good" : event.status === "started" ? "plan" : "bad"];
      case "check":
        return ["check " + event.subtask + " " + (event.passed ? "passed" : "failed") + " ("
          + event.by + "): " + event.detail, event.passed ? "good" : "bad"];
      case "switch":
        return ["switch " + event.subtask + " to the " + event.to + " worker", "plan"];
      default:
        return [event.kind, "plan"];
    }
  }

  function showPlan(event) {
    view.plan.push(event);
    const [line, cls] = planLine(event);
    const item = text("li", line, "plan-event " + cls);
    item.dataset.kind = event.kind;
    if ((event.kind === "plan" || event.kind === "replan") && event.subtasks) {
      subtaskLines.clear();
      const list = document.createElement("ol");
      for (const s of event.subtasks) {
        const entry = text("li", s.id + " (" + s.worker + "): " + s.description);
        entry.dataset.subtask = s.id;
        entry.className = "subtask pending";
        subtaskLines.set(s.id, entry);
        list.appendChild(entry);
      }
      item.appendChild(list);
    }
    if (event.kind === "subtask" && subtaskLines.has(event.subtask)) {
      subtaskLines.get(event.subtask).className = "subtask " + event.status;
    }
    logItem(item);
  }

  const events = new EventSource(url("/events"));
  events.addEventListener("state", (e) => {
    const data = JSON.parse(e.data);
    showState(data.state, data.reason);
  });
  events.addEventListener("acting", (e) => {
    view.acting = JSON.parse(e.data).acting;
    document.getElementById("acting").hidden = !view.acting;
  });
  events.addEventListener("step", (e) => showStep(JSON.parse(e.data)));
  events.addEventListener("plan", (e) => showPlan(JSON.parse(e.data)));
  events.addEventListener("result", (e) => {
    const data = JSON.parse(e.data);
    view.result = data;
    document.getElementById("result").textContent = data.status + ": " + data.reason;
    showState(view.state, document.getElementById("reason").textContent);
    events.close();
  });

  // JSON bodies only: the server refuses text/plain and form posts, the kinds a page of another
  // origin could send without a CORS preflight
  async function post(path, body) {
    const reply = await fetch(url(path), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return reply.ok;
  }

  for (const command of ["pause", "resume", "take_over", "hand_back", "stop"]) {
    document.getElementById(command).addEventListener("click", () => post("/control", { command }));
  }

  // -- the user's input, while they have taken over: one request at a time, in order
  let queue = Promise.resolve();
  function send(input) {
    if (view.state !== "taken_over") return;
    queue = queue.then(() => post("/input", input)).then((ok) => { if (ok) view.inputs += 1; });
  }
  const buttons = ["left", "middle", "right"];
  function pixel(e) {
    const box = canvas.getBoundingClientRect();
    return {
      x: Math.round(((e.clientX - box.left) * canvas.width) / box.width),
      y: Math.round(((e.clientY - box.top) * canvas.height) / box.height),
    };
  }
  let down = null;
  canvas.addEventListener("mousedown", (e) => {
    if (view.state !== "taken_over") return;
    e.preventDefault();
    canvas.focus();
    down = { at: pixel(e), button: buttons[e.button] || "left" };
  });
  canvas.addEventListener("mouseup", (e) => {
    if (!down || view.state !== "taken_over") return;
    e.preventDefault();
    const at = pixel(e);
    if (Math.abs(at.x - down.at.x) + Math.abs(at.y - down.at.y) > 4) {
      send({ kind: "drag", x: down.at.x, y: down.at.y, to_x: at.x, to_y: at.y, button: down.button });
    } else {
      send({ kind: "click", x: at.x, y: at.y, button: down.button, clicks: 1 });
    }
    down = null;
  });
  canvas.addEventListener("contextmenu", (e) => e.preventDefault());
  canvas.addEventListener("wheel", (e) => {
    if (view.state !== "taken_over") return;
    e.preventDefault();
    const at = pixel(e);
    const steps = Math.max(1, Math.round(Math.abs(e.deltaY || e.deltaX) / 100));
    const horizontal = Math.abs(e.deltaX) > Math.abs(e.deltaY);
    const sign = (horizontal ? e.deltaX : e.deltaY) > 0 ? -1 : 1;
    send({ kind: "scroll", x: at.x, y: at.y, clicks: sign * steps, horizontal });
  }, { passive: false });

  const named = {
    Enter: "enter", Backspace: "backspace", Tab: "tab", Escape: "esc", Delete: "delete",
    ArrowLeft: "left", ArrowRight: "right", ArrowUp: "up", ArrowDown: "down", Home: "home",
    End: "end", PageUp: "pageup", PageDown: "pagedown", Insert: "insert", " ": "space",
  };
  const modifiers = new Set(["Control", "Shift", "Alt", "Meta", "AltGraph", "CapsLock"]);
  let typed = "";
  let flush = null;
  function sendTyped() {
    if (typed) send({ kind: "text", text: typed });
    typed = "";
    flush = null;
  }
  document.addEventListener("keydown", (e) => {
    if (view.state !== "taken_over" || modifiers.has(e.key)) return;
    e.preventDefault();
    const combo = e.ctrlKey || e.altKey || e.metaKey;
    if (e.key.length === 1 && !combo) {  // plain characters go as text, a few at a time
      typed += e.key;
      if (!flush) flush = setTimeout(sendTyped, 120);
      return;
    }
    sendTyped();
    let key = named[e.key] || (/^F\d{1,2}$/.test(e.key) ? e.key.toLowerCase() : e.key);
    if (key.length === 1) key = key.toLowerCase();
    const keys = [];
    if (e.ctrlKey) keys.push("ctrl");
    if (e.altKey) keys.push("alt");
    if (e.shiftKey && (key.length > 1 || combo)) keys.push("shift");
    if (e.metaKey) keys.push("win");
    keys.push(key);
    send({ kind: "key", keys });
  });

  frames();
})();
