// Ward dashboard: the little the pages need beyond HTML. Live updates come
// from the API's event streams (EventSource: the session cookie
// authenticates them); buttons call the JSON API with the session's CSRF
// token and show the API's own error message when it refuses.
(function () {
  "use strict";

  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.content : "";
  var TERMINAL = { SUCCEEDED: 1, FAILED: 1, CANCELLED: 1, TIMEOUT: 1, DENIED: 1 };

  // api calls the JSON API; it resolves to the answer's JSON, or rejects
  // with an Error whose message is the API's.
  function api(method, path, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (method !== "GET") opts.headers["X-CSRF-Token"] = csrf;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    return fetch(path, opts).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!resp.ok) {
          var msg = data && data.error ? data.error.message + " (" + data.error.code + ")" : resp.status + " " + resp.statusText;
          var err = new Error(msg);
          err.status = resp.status;
          throw err;
        }
        return data;
      });
    });
  }

  var toastTimer;
  function toast(msg, isErr) {
    var t = document.getElementById("toast");
    if (!t) return;
    t.textContent = msg;
    t.className = "toast show" + (isErr ? " err" : "");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.className = "toast"; }, isErr ? 8000 : 3000);
  }

  // say writes a message beside a control (its .msg sibling), else toasts.
  function say(el, msg, isErr) {
    var box = el && el.parentElement ? el.parentElement.querySelector(".msg") : null;
    if (box) {
      box.textContent = msg;
      box.className = "msg " + (isErr ? "err" : "ok");
    }
    if (!box || isErr) toast(msg, isErr);
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function pad(n, w) { n = String(n); while (n.length < w) n = "0" + n; return n; }
  function ts(ms) {
    if (!ms) return "";
    var d = new Date(ms);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1, 2) + "-" + pad(d.getUTCDate(), 2) + " " + clock(ms);
  }
  function clock(ms) {
    if (!ms) return "";
    var d = new Date(ms);
    return pad(d.getUTCHours(), 2) + ":" + pad(d.getUTCMinutes(), 2) + ":" + pad(d.getUTCSeconds(), 2) + "." + pad(d.getUTCMilliseconds(), 3);
  }
  function badge(state) { return el("span", { "class": "badge st-" + state }, state); }

  // took says a duration in ms as the pages do (fmtMS): "830 ms",
  // "1.2 s", "2m5s", "1h2m3s".
  function took(ms) {
    ms = Math.max(0, Math.round(ms));
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    var s = Math.round(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    return (h ? h + "h" + m + "m" : m + "m") + s + "s";
  }

  // A job's duration that still grows (data-running, data-created: Unix
  // ms) is counted on, every second, until the job ends.
  function tickDurations() {
    var now = Date.now();
    document.querySelectorAll('[data-running="true"][data-created]').forEach(function (e) {
      var c = +e.dataset.created;
      if (c) e.textContent = took(now - c);
    });
  }
  if (document.querySelector("[data-created]") || document.getElementById("jobs")) setInterval(tickDurations, 1000);

  // ------------------------------------------------------------ buttons

  // <button data-post="/v1/..." data-method="DELETE" data-confirm="..." data-done="..." data-then="reload">
  // calls the API (POST unless data-method says otherwise); a data-confirm
  // button asks for a second click.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-post]");
    if (!b) return;
    ev.preventDefault();
    if (b.dataset.confirm && b.dataset.armed !== "true") {
      b.dataset.armed = "true";
      b.dataset.label = b.textContent;
      b.textContent = "Confirm: " + b.dataset.label.toLowerCase();
      b.title = b.dataset.confirm;
      setTimeout(function () {
        if (b.dataset.armed === "true") { b.dataset.armed = ""; b.textContent = b.dataset.label; }
      }, 5000);
      return;
    }
    if (b.dataset.armed === "true") { b.dataset.armed = ""; b.textContent = b.dataset.label; }
    b.disabled = true;
    api(b.dataset.method || "POST", b.dataset.post).then(function (data) {
      var done = b.dataset.done || "Done";
      if (data && data.version) done += " to " + data.version;
      if (data && data.job_id && b.dataset.post.indexOf("/dlq/") >= 0) done += ": job " + data.job_id.slice(0, 8) + " submitted again";
      say(b, done, false);
      b.dataset.doneState = "true";
      if (data && data.dropped) {
        var row = b.closest("tr");
        if (row) {
          row.classList.add("revoked");
          row.querySelectorAll("button[data-post]").forEach(function (x) { x.disabled = true; });
        }
      }
      if (b.dataset.then === "reload") setTimeout(function () { location.reload(); }, 700);
    }).catch(function (err) {
      say(b, err.message, true);
      b.disabled = false;
    });
  });

  // <form data-confirm="..."> (a plain form POST, with the session's CSRF
  // token in a hidden field) asks for a second click of its button, as a
  // data-confirm button does.
  document.addEventListener("submit", function (ev) {
    var f = ev.target.closest("form[data-confirm]");
    if (!f) return;
    var b = f.querySelector('button[type="submit"]');
    if (!b || b.dataset.armed === "true") {
      if (b) b.disabled = true; // submitted: once
      return;
    }
    ev.preventDefault();
    b.dataset.armed = "true";
    b.dataset.label = b.textContent;
    b.dataset.aria = b.getAttribute("aria-label") || "";
    b.textContent = "Confirm: " + b.dataset.label.toLowerCase();
    if (b.dataset.aria) b.setAttribute("aria-label", "Confirm: " + b.dataset.aria.toLowerCase());
    say(b, f.dataset.confirm, false);
    setTimeout(function () {
      if (b.dataset.armed !== "true" || b.disabled) return;
      b.dataset.armed = "";
      b.textContent = b.dataset.label;
      if (b.dataset.aria) b.setAttribute("aria-label", b.dataset.aria);
      say(b, "", false);
    }, 5000);
  });

  // ------------------------------------------------------------ jobs list

  var jobsTable = document.getElementById("jobs");
  var fetching = {}, nfetching = 0, missed = {}, arrived = {};

  function jobRow(j) {
    var tr = el("tr", { "data-job": j.job_id, "data-state": j.state, "data-at": String(j.updated_at_unix_ms || 0) });
    var td = el("td");
    td.appendChild(el("a", { href: "/ui/jobs/" + encodeURIComponent(j.job_id), "class": "mono", title: j.job_id }, j.job_id.slice(0, 8)));
    tr.appendChild(td);
    td = el("td");
    var b = badge(j.state);
    b.setAttribute("data-field", "state");
    td.appendChild(b);
    tr.appendChild(td);
    tr.appendChild(el("td", null, j.topic || ""));
    tr.appendChild(el("td", null, j.tenant_id || ""));
    tr.appendChild(el("td", { "data-field": "worker" }, j.worker_id || ""));
    tr.appendChild(el("td", { "class": "mono" }, ts(j.created_at_unix_ms)));
    var ended = TERMINAL[j.state] ? (j.updated_at_unix_ms || Date.now()) : Date.now();
    tr.appendChild(el("td", { "class": "num mono", "data-field": "took", "data-created": String(j.created_at_unix_ms || 0),
      "data-running": TERMINAL[j.state] ? null : "true" }, j.created_at_unix_ms ? took(ended - j.created_at_unix_ms) : ""));
    var problem = [j.error_code, j.error_message].filter(Boolean).join(": ");
    // A job the scheduler failed (no pool, retries spent) has no error of
    // its own: its reason code says why.
    if (!problem && TERMINAL[j.state] && j.state !== "SUCCEEDED") problem = j.reason || "";
    tr.appendChild(el("td", { "class": "clip", "data-field": "reason", title: problem }, problem));
    td = el("td");
    if (jobsTable.dataset.canCancel === "true" && !TERMINAL[j.state]) {
      td.appendChild(el("button", { "class": "small", "data-post": "/v1/jobs/" + encodeURIComponent(j.job_id) + "/cancel",
        "data-confirm": "Cancel job " + j.job_id + "?", "data-done": "Cancel asked" }, "Cancel"));
    }
    tr.appendChild(td);
    return tr;
  }

  function matches(j) {
    var d = jobsTable.dataset;
    if (d.state && j.state !== d.state) return false;
    if (d.topic && j.topic !== d.topic) return false;
    if (d.tenant && j.tenant_id !== d.tenant) return false;
    if (d.worker && j.worker_id !== d.worker) return false;
    // since and until bound the creation time: since <= created < until.
    var created = j.created_at_unix_ms || 0;
    if (d.since && created < +d.since) return false;
    if (d.until && created >= +d.until) return false;
    return true;
  }

  // addJob puts a job's row first (the first page only), or updates it.
  function addJob(j) {
    var tbody = jobsTable.tBodies[0];
    var old = tbody.querySelector('tr[data-job="' + CSS.escape(j.job_id) + '"]');
    if (old) { updateRow(old, j); return; }
    if (jobsTable.dataset.live !== "true" || !matches(j)) return;
    var tr = jobRow(j);
    tr.className = "flash";
    tbody.insertBefore(tr, tbody.firstChild);
    var none = document.getElementById("no-jobs");
    if (none) none.remove();
    var limit = parseInt(jobsTable.dataset.limit || "50", 10);
    while (tbody.rows.length > limit) tbody.deleteRow(tbody.rows.length - 1);
  }

  // RANK orders the states a job goes through once, for events of the
  // same millisecond.
  var RANK = { PENDING: 1, SCHEDULED: 2, DISPATCHED: 3, RUNNING: 4 };

  // updateRow applies a job's event to its row, unless it is older than
  // what the row shows: events come from several goroutines and
  // replicas, so a DISPATCHED can come after the SUCCEEDED that followed
  // it, and an end is final.
  function updateRow(tr, ev) {
    if (!ev.state) return;
    var cur = tr.dataset.state, at = ev.at_unix_ms || ev.updated_at_unix_ms || 0, was = +(tr.dataset.at || 0);
    if (TERMINAL[cur] && !TERMINAL[ev.state]) return;
    if (at && was && (at < was || (at === was && (RANK[ev.state] || 9) < (RANK[cur] || 9)))) return;
    if (at) tr.dataset.at = at;
    tr.dataset.state = ev.state;
    var b = tr.querySelector('[data-field="state"]');
    if (b) { b.textContent = ev.state; b.className = "badge st-" + ev.state; }
    if (ev.worker_id) { var w = tr.querySelector('[data-field="worker"]'); if (w) w.textContent = ev.worker_id; }
    if (TERMINAL[ev.state]) {
      var tk = tr.querySelector('[data-field="took"]');
      if (tk) {
        tk.removeAttribute("data-running");
        if (at && +tk.dataset.created) tk.textContent = took(at - tk.dataset.created);
      }
      var problem = ev.error_message !== undefined ? [ev.error_code, ev.error_message].filter(Boolean).join(": ")
        : (ev.state === "SUCCEEDED" ? "" : [ev.reason, ev.message].filter(Boolean).join(": "));
      if (!problem && ev.state !== "SUCCEEDED") problem = ev.reason || "";
      var r = tr.querySelector('[data-field="reason"]');
      if (r) { r.textContent = problem; r.title = problem; }
      var c = tr.querySelector("button[data-post$='/cancel']");
      if (c) c.remove();
    }
    tr.classList.remove("flash");
    void tr.offsetWidth;
    tr.classList.add("flash");
  }

  // fetchJob reads a job the page has no row for (at most 4 at a time:
  // past that, the page says how many it left out). An event of the job
  // that comes while it is read is kept (the newest) and applied to the
  // row once it is there, unless the job read back is newer: otherwise a
  // job that ends while it is read would keep the state it was read in.
  function fetchJob(id, ev) {
    if (fetching[id]) { arrived[id] = ev; return; }
    if (nfetching >= 4) { missed[id] = true; showMissed(); return; }
    fetching[id] = true;
    nfetching++;
    api("GET", "/v1/jobs/" + encodeURIComponent(id) + "?result=false").then(function (j) {
      addJob(j);
      var later = arrived[id];
      var tr = jobsTable.tBodies[0].querySelector('tr[data-job="' + CSS.escape(id) + '"]');
      if (later && tr && !TERMINAL[tr.dataset.state] && (later.at_unix_ms || 0) >= (j.updated_at_unix_ms || 0)) updateRow(tr, later);
    }).catch(function () {}).then(function () {
      delete fetching[id];
      delete arrived[id];
      nfetching--;
    });
  }

  function showMissed() {
    var n = document.getElementById("missed");
    if (!n) {
      n = el("p", { id: "missed", "class": "muted" });
      jobsTable.parentElement.insertBefore(n, jobsTable);
    }
    n.textContent = "";
    n.appendChild(document.createTextNode(Object.keys(missed).length + " more new jobs. "));
    n.appendChild(el("a", { href: location.href }, "Reload"));
  }

  function stream(path, handlers) {
    if (!window.EventSource) return null;
    var es = new EventSource(path, { withCredentials: true });
    for (var name in handlers) {
      (function (name) {
        es.addEventListener(name, function (e) {
          var data;
          try { data = JSON.parse(e.data); } catch (x) { return; }
          handlers[name](data, e, es);
        });
      })(name);
    }
    es.addEventListener("error", function () {
      if (es.readyState === EventSource.CLOSED) toast("Live updates stopped: reload the page", true);
    });
    window.addEventListener("pagehide", function () { es.close(); });
    return es;
  }

  if (jobsTable) {
    stream("/v1/events", {
      state: function (ev) {
        var tr = jobsTable.tBodies[0].querySelector('tr[data-job="' + CSS.escape(ev.job_id) + '"]');
        if (tr) { updateRow(tr, ev); return; }
        if (jobsTable.dataset.live === "true" && (!jobsTable.dataset.state || jobsTable.dataset.state === ev.state || fetching[ev.job_id])) fetchJob(ev.job_id, ev);
      }
    });
  }

  var submitForm = document.getElementById("submit-form");
  if (submitForm) {
    submitForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = submitForm.elements, msg = document.getElementById("submit-msg");
      var body = { topic: f.topic.value.trim() };
      var pr = parseInt(f.priority.value, 10);
      if (pr) body.priority = pr;
      if (f.tenant && f.tenant.value.trim()) body.tenant = f.tenant.value.trim();
      var payload = f.payload.value;
      if (f.kind.value === "json") {
        if (payload.trim() !== "") {
          try { body.payload = JSON.parse(payload); } catch (e) {
            msg.textContent = "The payload is not JSON: " + e.message; msg.className = "msg err"; return;
          }
        }
      } else {
        body.payload_text = payload;
      }
      var button = document.getElementById("submit-button");
      button.disabled = true;
      api("POST", "/v1/jobs", body).then(function (rep) {
        msg.textContent = "";
        msg.className = "msg ok";
        msg.appendChild(document.createTextNode((rep.duplicate ? "Already submitted: job " : "Accepted: job ")));
        msg.appendChild(el("a", { href: "/ui/jobs/" + encodeURIComponent(rep.job_id), id: "submitted-job" }, rep.job_id));
        return api("GET", "/v1/jobs/" + encodeURIComponent(rep.job_id) + "?result=false").then(addJob);
      }).catch(function (err) {
        msg.textContent = err.message;
        msg.className = "msg err";
      }).then(function () { button.disabled = false; });
    });
  }

  // ------------------------------------------------------------ a job

  var job = document.getElementById("job");
  if (job && job.dataset.terminal !== "true") {
    var seen = parseInt(job.dataset.events || "0", 10);
    var out = document.getElementById("output");
    var decoder = window.TextDecoder ? new TextDecoder("utf-8") : null;
    var encoder = window.TextEncoder ? new TextEncoder() : null;
    // The output streamed before the page was served is in it already:
    // the stream goes on from the chunk after.
    var nextSeq = parseInt(out.dataset.nextSeq || "1", 10) || 1, pending = {};
    var writeChunk = function (p) {
      var bytes = null;
      if (p.output_base64 !== undefined) {
        var bin = atob(p.output_base64);
        bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      } else {
        var text = p.output_text !== undefined ? p.output_text : (p.output !== undefined ? JSON.stringify(p.output) : "");
        if (!decoder || !encoder) { out.textContent += text; return; }
        bytes = encoder.encode(text);
      }
      if (decoder) out.textContent += decoder.decode(bytes, { stream: true });
    };
    stream("/v1/jobs/" + encodeURIComponent(job.dataset.job) + "/events", {
      state: function (ev, e, es) {
        var n = parseInt(e.lastEventId || "0", 10);
        if (n && n <= seen) return;
        seen = n || seen + 1;
        var st = document.getElementById("job-state");
        st.textContent = ev.state;
        st.className = "badge st-" + ev.state;
        var tb = document.getElementById("timeline").tBodies[0];
        var tr = el("tr", { "data-state": ev.state });
        tr.appendChild(el("td", { "class": "mono" }, clock(ev.at_unix_ms)));
        tr.appendChild(el("td", { "class": "mono muted" }, ""));
        var td = el("td");
        td.appendChild(badge(ev.state));
        tr.appendChild(td);
        tr.appendChild(el("td", null, ev.worker_id || ""));
        tr.appendChild(el("td", null, ev.reason || ""));
        tr.appendChild(el("td", { "class": "msgcell" }, ev.message || ""));
        tr.className = "flash";
        tb.appendChild(tr);
        if (TERMINAL[ev.state]) {
          es.close();
          // The page as it ended: the result, the decision, the whole timeline.
          setTimeout(function () { location.reload(); }, 400);
        }
      },
      progress: function (p) {
        var prog = document.getElementById("progress");
        if (p.kind === "OUTPUT") {
          if (!p.seq) { writeChunk(p); return; }
          if (p.seq < nextSeq) return;
          pending[p.seq] = p;
          while (pending[nextSeq]) { writeChunk(pending[nextSeq]); delete pending[nextSeq]; nextSeq++; }
          prog.textContent = "streaming: " + (nextSeq - 1) + " chunks";
        } else if (p.kind === "PROGRESS") {
          prog.textContent = (p.percent ? p.percent + "% " : "") + (p.message || "");
          // A row in the timeline, as the page shows the reports before.
          var tr = el("tr", { "data-kind": "progress", "data-percent": String(p.percent || 0) });
          tr.appendChild(el("td", { "class": "mono" }, clock(p.sent_at_unix_ms)));
          tr.appendChild(el("td", { "class": "mono muted" }, ""));
          var td = el("td");
          td.appendChild(el("span", { "class": "badge st-PROGRESS" }, "PROGRESS"));
          tr.appendChild(td);
          tr.appendChild(el("td", null, p.worker_id || ""));
          tr.appendChild(el("td", null, ""));
          td = el("td", { "class": "msgcell" });
          td.appendChild(el("b", null, (p.percent || 0) + "%"));
          td.appendChild(document.createTextNode(" " + (p.message || "")));
          tr.appendChild(td);
          tr.className = "flash";
          document.getElementById("timeline").tBodies[0].appendChild(tr);
        } else if (p.kind === "STARTED") {
          prog.textContent = "started on " + (p.worker_id || "a host");
        }
      }
    });
  }

  // ------------------------------------------------------------ overview

  var live = document.getElementById("live-events");
  if (live) {
    var count = 0;
    stream(live.dataset.stream, {
      state: function (ev) {
        count++;
        document.getElementById("live-count").textContent = count;
        var empty = live.querySelector(".empty");
        if (empty) empty.remove();
        var li = el("li");
        li.appendChild(el("span", { "class": "mono muted" }, clock(ev.at_unix_ms)));
        li.appendChild(badge(ev.state));
        li.appendChild(el("a", { href: "/ui/jobs/" + encodeURIComponent(ev.job_id), "class": "mono" }, ev.job_id.slice(0, 8)));
        if (ev.topic) li.appendChild(el("span", null, ev.topic));
        if (ev.worker_id) li.appendChild(el("span", { "class": "muted" }, ev.worker_id));
        if (ev.message) li.appendChild(el("span", { "class": "muted" }, ev.message));
        live.insertBefore(li, live.firstChild);
        while (live.children.length > 50) live.removeChild(live.lastChild);
      }
    });
  }

  // ------------------------------------------------------------ refreshed parts

  // <div id="refresh" data-refresh="5000">: the part is fetched again every
  // so often (hosts' gauges, a running workflow), while the page is seen.
  var part = document.getElementById("refresh");
  if (part && part.dataset.refresh) {
    var every = parseInt(part.dataset.refresh, 10);
    var tick = function () {
      // Not while the page is hidden, nor while a button in the part
      // waits for its second click (a Drain form's).
      if (document.hidden || part.querySelector('[data-armed="true"]')) { setTimeout(tick, every); return; }
      fetch(location.href, { credentials: "same-origin" }).then(function (resp) {
        if (!resp.ok) throw new Error(resp.status);
        return resp.text();
      }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("refresh");
        if (!fresh) return;
        part.innerHTML = fresh.innerHTML;
        if (fresh.dataset.refresh) setTimeout(tick, every);
        else part.removeAttribute("data-refresh");
      }).catch(function () { setTimeout(tick, every * 3); });
    };
    setTimeout(tick, every);
  }

  // ------------------------------------------------------------ policies

  var evalForm = document.getElementById("eval-form");
  if (evalForm) {
    evalForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var msg = document.getElementById("eval-msg"), res = document.getElementById("eval-result");
      res.textContent = "";
      msg.textContent = "";
      api("POST", "/v1/policies/eval", document.getElementById("eval-input").value).then(function (r) {
        var result = r.result || {};
        var p = el("p");
        var b = badge(result.decision || "?");
        b.className = "badge dec-" + (result.decision || "");
        b.id = "eval-decision";
        p.appendChild(b);
        p.appendChild(document.createTextNode(" revision " + (result.policy_revision || "") + (r.source ? " (" + r.source + ")" : "")));
        res.appendChild(p);
        if (result.reasons && result.reasons.length) {
          res.appendChild(el("h3", null, "Deny messages"));
          var ul = el("ul", { "class": "reasons", id: "eval-reasons" });
          result.reasons.forEach(function (m) { ul.appendChild(el("li", null, m)); });
          res.appendChild(ul);
        }
        if (result.constraints) {
          res.appendChild(el("h3", null, "Constraints"));
          res.appendChild(el("pre", { "class": "json" }, JSON.stringify(result.constraints, null, 2)));
        }
        if (r.fired && r.fired.length) {
          res.appendChild(el("h3", null, "Rules that fired"));
          var t = el("table", { "class": "t" });
          var h = t.createTHead().insertRow();
          ["rule", "location", "value"].forEach(function (c) { h.appendChild(el("th", null, c)); });
          var tb = t.createTBody();
          r.fired.forEach(function (f) {
            var tr = tb.insertRow();
            tr.appendChild(el("td", { "class": "mono" }, f.rule));
            tr.appendChild(el("td", { "class": "mono muted" }, f.location));
            tr.appendChild(el("td", { "class": "mono" }, f.value));
          });
          res.appendChild(t);
        }
      }).catch(function (err) { msg.textContent = err.message; msg.className = "msg err"; });
    });
  }

  var testButton = document.getElementById("test-button");
  if (testButton) {
    testButton.addEventListener("click", function () {
      var msg = document.getElementById("test-msg"), res = document.getElementById("test-result");
      testButton.disabled = true;
      res.textContent = "";
      api("POST", "/v1/policies/test").then(function (r) {
        msg.textContent = (r.passed ? "Passed: " : "FAILED: ") + r.results.length + " tests of revision " + r.revision;
        msg.className = "msg " + (r.passed ? "ok" : "err");
        var t = el("table", { "class": "t" });
        var h = t.createTHead().insertRow();
        ["test", "outcome", "ms", "error"].forEach(function (c) { h.appendChild(el("th", null, c)); });
        var tb = t.createTBody();
        r.results.forEach(function (x) {
          var tr = tb.insertRow();
          tr.appendChild(el("td", { "class": "mono" }, x.name));
          tr.appendChild(el("td", null, x.outcome));
          tr.appendChild(el("td", { "class": "num" }, String(x.duration_ms)));
          tr.appendChild(el("td", { "class": "error" }, x.error || ""));
        });
        res.appendChild(t);
      }).catch(function (err) { msg.textContent = err.message; msg.className = "msg err"; })
        .then(function () { testButton.disabled = false; });
    });
  }

  // The Impact form: the decisions a file would flip, by tenant and rule.
  var impactForm = document.getElementById("impact-form");
  if (impactForm) {
    impactForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var msg = document.getElementById("impact-msg"), res = document.getElementById("impact-result");
      var button = document.getElementById("impact-button");
      var name = document.getElementById("impact-name").value.trim();
      if (!name) { msg.textContent = "Name the file."; msg.className = "msg err"; return; }
      var files = {};
      files[name] = document.getElementById("impact-rego").value;
      res.textContent = "";
      msg.textContent = "Asking the kernels…";
      msg.className = "msg";
      button.disabled = true;
      api("POST", "/v1/policies/impact", { files: files, base: true }).then(function (r) {
        var kernels = r.kernels || [], flips = r.flips || [];
        msg.textContent = "Revision " + r.revision + " against " + (r.base_revision || "nothing") + " on " + kernels.length +
          " kernel(s): " + (r.evaluated || 0) + " recent decisions evaluated";
        msg.className = "msg ok";
        kernels.forEach(function (k) {
          if (k.error) res.appendChild(el("p", { "class": "error" }, "Refused by " + k.kernel_id + ": " + k.error));
        });
        if (!flips.length) {
          res.appendChild(el("p", { id: "impact-none" }, "No recent decision would change."));
          return;
        }
        var t = el("table", { "class": "t", id: "impact-flips" });
        t.appendChild(el("caption", { "class": "vh" }, "The recent decisions the file would change"));
        var h = t.createTHead().insertRow();
        [["tenant"], ["decision"], ["decisions", "num"], ["reason"], ["topics"], ["some jobs"]].forEach(function (c) {
          h.appendChild(el("th", { "class": c[1], scope: "col" }, c[0]));
        });
        var tb = t.createTBody();
        flips.forEach(function (f) {
          var tr = tb.insertRow();
          tr.setAttribute("data-tenant", f.tenant_id || "");
          tr.appendChild(el("td", { "data-field": "tenant" }, f.tenant_id || ""));
          var td = el("td", { "data-field": "flip" });
          var from = badge(f.from || "?"), to = badge(f.to || "?");
          from.className = "badge dec-" + (f.from || "");
          to.className = "badge dec-" + (f.to || "");
          td.appendChild(from);
          td.appendChild(document.createTextNode(" → "));
          td.appendChild(to);
          tr.appendChild(td);
          tr.appendChild(el("td", { "class": "num", "data-field": "count" }, String(f.count || 0)));
          tr.appendChild(el("td", { "class": "msgcell", "data-field": "reason" }, f.reason || "—"));
          tr.appendChild(el("td", { "class": "mono" }, (f.topics || []).join(", ")));
          td = el("td", { "data-field": "jobs" });
          (f.job_ids || []).forEach(function (id, i) {
            if (i) td.appendChild(document.createTextNode(" "));
            td.appendChild(el("a", { href: "/ui/jobs/" + encodeURIComponent(id), "class": "mono", title: id }, id.slice(0, 8)));
          });
          tr.appendChild(td);
        });
        res.appendChild(t);
      }).catch(function (err) { msg.textContent = err.message; msg.className = "msg err"; })
        .then(function () { button.disabled = false; });
    });
  }

  // ------------------------------------------------------------ workflows

  var runForm = document.getElementById("run-form");
  if (runForm) {
    var known = document.getElementById("run-known");
    if (known) {
      // Choosing a known workflow fills the name.
      known.addEventListener("change", function () {
        if (known.value) runForm.elements.workflow.value = known.value;
      });
    }
    runForm.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = runForm.elements, msg = document.getElementById("run-msg");
      var body = {};
      if (f.workflow.value.trim()) body.workflow = f.workflow.value.trim();
      if (f.definition.value.trim()) body.definition = f.definition.value;
      if (!body.workflow && !body.definition) {
        msg.textContent = "Choose a known workflow, type a workflow's name, or write a definition.";
        msg.className = "msg err";
        return;
      }
      if (f.input.value.trim()) {
        try { body.input = JSON.parse(f.input.value); } catch (e) {
          msg.textContent = "The input is not JSON: " + e.message; msg.className = "msg err"; return;
        }
      }
      api("POST", "/v1/runs", body).then(function (r) {
        location.href = "/ui/workflows/" + encodeURIComponent(r.run_id);
      }).catch(function (err) { msg.textContent = err.message; msg.className = "msg err"; });
    });
  }

  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("#rerun-button");
    if (!b) return;
    var step = document.getElementById("rerun-step").value;
    b.disabled = true;
    api("POST", "/v1/runs/" + encodeURIComponent(b.dataset.run) + "/rerun", { from_step: step }).then(function (r) {
      location.href = "/ui/workflows/" + encodeURIComponent(r.run_id);
    }).catch(function (err) { say(b, err.message, true); b.disabled = false; });
  });
})();
