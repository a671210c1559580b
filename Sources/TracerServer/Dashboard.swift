import HTTPTypes
import Hummingbird
import NIOCore

/// The dashboard: one self-contained page (no build step, nothing fetched from elsewhere). It
/// asks for an admin token once (kept in the tab's sessionStorage; `#token=…` in the address also
/// works), draws the site's floor plan from `/v1/beacons`, keeps occupancy and exposure counts per
/// anchor live over `/v1/watch`, looks devices up, and shows a beacon's exposures as a table and
/// a timeline.
enum Dashboard {
    static func response() -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy:
                    "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page))
        )
    }

    static let page = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>tracer — site dashboard</title>
        <style>
        :root { --ink: #1d2733; --muted: #6b7785; --line: #d5dbe2; --bg: #f6f8fa; --accent: #1f6feb; --hot: #d1242f; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
        header { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: #fff; border-bottom: 1px solid var(--line); }
        header h1 { font-size: 18px; margin: 0; }
        #status { margin-left: auto; font-size: 13px; color: var(--muted); }
        #status::before { content: "●"; margin-right: 6px; color: #999; }
        #status[data-live="yes"]::before { color: #1a7f37; }
        main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(300px, 2fr); gap: 16px; padding: 16px 20px; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
        section h2 { font-size: 15px; margin: 0 0 8px; }
        #plan svg { width: 100%; height: auto; max-height: calc(100vh - 190px); display: block; }
        .room { stroke: #8c99a6; stroke-width: 0.08; }
        .room-name { font-size: 0.9px; fill: #44505c; }
        .anchor { cursor: pointer; }
        .anchor circle.dot { fill: var(--accent); stroke: #fff; stroke-width: 0.15; }
        .anchor.beacon circle.dot { fill: #8c99a6; }
        .anchor circle.ring { fill: none; stroke: var(--hot); stroke-width: 0.25; visibility: hidden; }
        .anchor.exposed circle.ring { visibility: visible; }
        .anchor text { font-size: 0.85px; font-weight: 600; text-anchor: middle; dominant-baseline: central; fill: #fff; pointer-events: none; }
        .anchor.selected circle.dot { stroke: var(--ink); stroke-width: 0.25; }
        table { width: 100%; border-collapse: collapse; font-size: 13px; }
        th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        tr.exposed td.exp { color: var(--hot); font-weight: 600; }
        tbody tr { cursor: pointer; }
        tbody tr:hover { background: #f0f4f8; }
        form { display: flex; gap: 8px; }
        input { flex: 1; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
        button { padding: 6px 12px; border: 0; border-radius: 6px; background: var(--accent); color: #fff; font: inherit; cursor: pointer; }
        .muted { color: var(--muted); }
        .error { color: var(--hot); }
        .pill { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; background: #eef1f4; }
        .pill.exposed { background: #fff1e5; color: #9a4a00; } .pill.positive { background: #ffebe9; color: var(--hot); } .pill.clear { background: #dafbe1; color: #116329; }
        #login { max-width: 420px; margin: 80px auto; }
        .legend { font-size: 12px; color: var(--muted); margin-top: 6px; }
        .timeline text { font-size: 11px; fill: #44505c; }
        .scroll { max-height: 340px; overflow-y: auto; margin-top: 8px; }
        .scroll thead th { position: sticky; top: 0; background: #fff; }
        </style>
        </head>
        <body>
        <header><h1 id="site">tracer</h1><span class="muted" id="generated"></span><span id="status" data-live="no">connecting</span></header>
        <div id="login" hidden>
          <section>
            <h2>Admin token</h2>
            <p class="muted">Create one on the server with <code>tracer token create --role admin</code>. It stays in this tab only.</p>
            <form id="login-form"><input id="token" type="password" placeholder="tracer_…" autocomplete="off"><button>Open</button></form>
            <p id="login-error" class="error"></p>
          </section>
        </div>
        <main id="app" hidden>
          <div>
            <section id="plan"><h2>Floor plan</h2><div id="plan-svg" class="muted">loading…</div>
              <div class="legend">Blue: a kiosk, with the devices heard there in the last <span id="window">2</span> minutes. Grey: a fixed beacon. Red ring: exposures there in the last 14 days. Click one for its exposures.</div>
            </section>
            <section id="beacon" style="margin-top:16px"><h2 id="beacon-title">Exposures per beacon</h2><div id="beacon-body" class="muted">Choose a kiosk on the plan or in the list.</div></section>
          </div>
          <div>
            <section><h2>Device lookup</h2>
              <form id="device-form"><input id="device-id" placeholder="uuid:major:minor" autocomplete="off"><button>Look up</button></form>
              <div id="device-body" style="margin-top:8px"></div>
            </section>
            <section style="margin-top:16px"><h2>Anchors</h2>
              <table><thead><tr><th>anchor</th><th>room</th><th class="num">now</th><th class="num">exposures</th><th>last heard</th></tr></thead><tbody id="anchors"></tbody></table>
            </section>
          </div>
        </main>
        <script>
        "use strict";
        const $ = (s) => document.querySelector(s);
        const el = (tag, attrs = {}, text) => {
          const svg = ["svg", "g", "polygon", "circle", "text", "rect", "line", "title"].includes(tag);
          const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
          for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
          if (text !== undefined) e.textContent = text;
          return e;
        };
        const roomColours = { teaching: "#e8f0fe", meeting: "#eef7ee", work: "#f3f0fa", dining: "#fff4e0", circulation: "#f2f2f2", entrance: "#eaf6f6", care: "#fdeeee" };
        let token = null, data = null, selected = null, refreshTimer = null, streams = [], refreshes = 0;

        function start() {
          // #token=…&beacon=KEY&device=ID: sign in, and open a beacon's exposures or a device.
          const m = location.hash.match(/token=([^&]+)/);
          const b = location.hash.match(/beacon=([^&]+)/), d = location.hash.match(/device=([^&]+)/);
          if (b) selected = decodeURIComponent(b[1]);
          if (d) $("#device-id").value = decodeURIComponent(d[1]);
          if (m) { sessionStorage.setItem("tracer-token", decodeURIComponent(m[1])); history.replaceState(null, "", location.pathname); }
          token = sessionStorage.getItem("tracer-token");
          if (!token) { $("#login").hidden = false; return; }
          open();
        }

        $("#login-form").addEventListener("submit", (e) => {
          e.preventDefault();
          sessionStorage.setItem("tracer-token", $("#token").value.trim());
          token = $("#token").value.trim();
          open();
        });

        async function api(path) {
          const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
          const body = await r.json().catch(() => ({}));
          if (!r.ok) { const err = new Error((body.error && body.error.message) || r.statusText); err.status = r.status; throw err; }
          return body;
        }

        async function open() {
          try {
            data = await api("/v1/beacons");
          } catch (e) {
            if (e.status === 401 || e.status === 403) {
              sessionStorage.removeItem("tracer-token");
              $("#login").hidden = false; $("#app").hidden = true;
              $("#login-error").textContent = e.message;
              return;
            }
            $("#status").textContent = "error: " + e.message;
            return;
          }
          $("#login").hidden = true; $("#app").hidden = false;
          $("#site").textContent = (data.site && data.site.name) || "tracer";
          $("#window").textContent = Math.round(data.occupancyWindowSeconds / 60);
          drawPlan(); update();
          if (selected) showBeacon(selected, false);
          if ($("#device-id").value) lookup();
          listen();
          setInterval(refresh, 15000);  // occupancy also falls as time passes
        }

        function listen() {
          for (const s of streams) s.close();
          const since = (seconds) => new Date(Date.now() - seconds * 1000).toISOString();
          const watches = [
            "path=*/interactions&field=start&since=" + since(data.occupancyWindowSeconds + 120),
            "path=*/exposures&field=from&since=" + since(14 * 86400),
          ];
          let open = 0;
          streams = watches.map((q) => {
            const s = new EventSource("/v1/watch?" + q + "&access_token=" + encodeURIComponent(token));
            s.onopen = () => { open += 1; if (open >= watches.length) live(true); };
            s.addEventListener("snapshot", scheduleRefresh);
            s.addEventListener("changes", scheduleRefresh);
            s.addEventListener("error", (e) => { if (e.data) { live(false); } });
            s.onerror = () => { live(false); };
            return s;
          });
        }

        function live(on) {
          $("#status").dataset.live = on ? "yes" : "no";
          $("#status").textContent = on ? "live" : "reconnecting…";
        }

        function scheduleRefresh() {
          if (refreshTimer) return;
          refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, 250);
        }

        async function refresh() {
          try { data = await api("/v1/beacons"); update(); if (selected) showBeacon(selected, false); }
          catch (e) { $("#status").textContent = "error: " + e.message; }
        }

        function bounds() {
          const xs = [], ys = [];
          for (const r of (data.site ? data.site.rooms : [])) for (const [x, y] of r.outline) { xs.push(x); ys.push(y); }
          for (const b of data.beacons) if (b.position) { xs.push(b.position[0]); ys.push(b.position[1]); }
          if (!xs.length) return null;
          return { x0: Math.min(...xs) - 1.5, x1: Math.max(...xs) + 1.5, y0: Math.min(...ys) - 1.5, y1: Math.max(...ys) + 1.5 };
        }

        function drawPlan() {
          const holder = $("#plan-svg");
          holder.textContent = "";
          const b = bounds();
          if (!b) { holder.textContent = "No floor plan: start tracer serve with --map BeaconMap/… to draw one."; return; }
          const svg = el("svg", { viewBox: `${b.x0} ${-b.y1} ${b.x1 - b.x0} ${b.y1 - b.y0}`, role: "img", "aria-label": "floor plan" });
          const flip = (x, y) => `${x},${-y}`;
          for (const r of data.site.rooms) {
            const g = el("g", { class: "room-group", id: "room-" + r.key });
            g.append(el("polygon", { class: "room", points: r.outline.map(([x, y]) => flip(x, y)).join(" "), fill: roomColours[r.use] || "#f4f4f4" }));
            // The name in the room's north-west corner, clear of the kiosks on its walls.
            const x0 = Math.min(...r.outline.map((p) => p[0])), y1 = Math.max(...r.outline.map((p) => p[1]));
            g.append(el("text", { class: "room-name", x: x0 + 0.6, y: -(y1 - 2) }, r.name));
            svg.append(g);
          }
          for (const a of data.beacons) {
            if (!a.position) continue;
            const g = el("g", { class: "anchor " + (a.kind || "kiosk"), id: "a-" + a.key, "data-key": a.key, transform: `translate(${a.position[0]},${-a.position[1]})` });
            const r = a.kind === "beacon" ? 0.45 : 0.8;
            g.append(el("circle", { class: "ring", r: r + 0.45 }));
            g.append(el("circle", { class: "dot", r }));
            if (a.kind !== "beacon") g.append(el("text", { id: "occ-" + a.key }, "0"));
            g.append(el("title", {}, a.key));
            g.addEventListener("click", () => showBeacon(a.key, true));
            svg.append(g);
          }
          holder.append(svg);
        }

        function update() {
          refreshes += 1;
          document.body.dataset.refreshes = refreshes;
          $("#generated").textContent = "as of " + new Date(data.generatedAt).toLocaleTimeString();
          const tbody = $("#anchors");
          tbody.textContent = "";
          for (const a of data.beacons) {
            const occ = document.getElementById("occ-" + a.key);
            if (occ) occ.textContent = a.occupancy;
            const g = document.getElementById("a-" + a.key);
            if (g) {
              g.classList.toggle("exposed", a.exposures > 0);
              g.querySelector("circle.dot").setAttribute("fill-opacity", a.occupancy > 0 || a.kind === "beacon" ? 1 : 0.55);
            }
            const tr = el("tr", { id: "row-" + a.key, class: a.exposures > 0 ? "exposed" : "" });
            tr.append(el("td", {}, a.key), el("td", {}, a.room || ""), el("td", { class: "num occ" }, String(a.occupancy)),
              el("td", { class: "num exp", id: "exp-" + a.key }, String(a.exposures)),
              el("td", { class: "muted" }, a.lastHeard ? new Date(a.lastHeard).toLocaleTimeString() : "—"));
            tr.addEventListener("click", () => showBeacon(a.key, true));
            tbody.append(tr);
          }
        }

        const time = (iso) => new Date(iso).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

        async function showBeacon(key, scroll) {
          selected = key;
          for (const g of document.querySelectorAll(".anchor")) g.classList.toggle("selected", g.dataset.key === key);
          $("#beacon-title").textContent = "Exposures at " + key + " (last 14 days)";
          const body = $("#beacon-body");
          let r;
          try { r = await api("/v1/beacons/" + encodeURIComponent(key) + "/exposures?since=" + new Date(Date.now() - 14 * 86400000).toISOString().slice(0, 10)); }
          catch (e) { body.textContent = e.message; body.className = "error"; return; }
          body.className = ""; body.textContent = "";
          if (!r.exposures.length) { body.append(el("p", { class: "muted" }, "No exposures at " + key + ".")); return; }
          body.append(el("p", { class: "muted" }, r.exposures.length + " exposure" + (r.exposures.length === 1 ? "" : "s") + " of " + new Set(r.exposures.map((x) => x.deviceId)).size + " device(s)"));
          const lines = el("div", { class: "scroll" });
          lines.append(timeline(r.exposures));
          body.append(lines);
          const table = el("table");
          const head = el("tr");
          for (const h of ["device", "report", "from", "to", "separation", "together"]) head.append(el("th", {}, h));
          table.append(el("thead")); table.tHead.append(head);
          const tb = el("tbody"); table.append(tb);
          for (const x of r.exposures) {
            const tr = el("tr");
            tr.append(el("td", {}, x.deviceId), el("td", {}, x.reportId), el("td", {}, time(x.from)), el("td", {}, time(x.to)),
              el("td", {}, x.separation.min.toFixed(1) + "–" + x.separation.max.toFixed(1) + " m"), el("td", { class: "num" }, Math.round(x.overlapSeconds / 60) + " min"));
            tr.addEventListener("click", () => { $("#device-id").value = x.deviceId; lookup(); });
            tb.append(tr);
          }
          const rows = el("div", { class: "scroll" });
          rows.append(table);
          body.append(rows);
          if (scroll) $("#beacon").scrollIntoView({ behavior: "smooth", block: "nearest" });
        }

        function timeline(exposures) {
          const devices = [...new Set(exposures.map((x) => x.deviceId))];
          const t0 = Math.min(...exposures.map((x) => Date.parse(x.from)));
          const t1 = Math.max(...exposures.map((x) => Date.parse(x.to)), t0 + 60000);
          const W = 640, left = 150, row = 18, H = devices.length * row + 28;
          const svg = el("svg", { class: "timeline", viewBox: `0 0 ${W} ${H}`, width: "100%" });
          const x = (t) => left + (t - t0) / (t1 - t0) * (W - left - 10);
          devices.forEach((d, i) => {
            svg.append(el("text", { x: 0, y: i * row + 13 }, d.length > 22 ? "…" + d.slice(-21) : d));
            svg.append(el("line", { x1: left, x2: W - 10, y1: i * row + 9, y2: i * row + 9, stroke: "#eef1f4" }));
          });
          for (const e of exposures) {
            const i = devices.indexOf(e.deviceId);
            const a = x(Date.parse(e.from)), b = Math.max(x(Date.parse(e.to)), a + 2);
            const bar = el("rect", { x: a, y: i * row + 3, width: b - a, height: 12, rx: 2, fill: "#d1242f", "fill-opacity": 0.75 });
            bar.append(el("title", {}, `${e.deviceId}: ${time(e.from)} – ${time(e.to)}, report ${e.reportId}`));
            svg.append(bar);
          }
          svg.append(el("text", { x: left, y: H - 4 }, time(new Date(t0).toISOString())));
          svg.append(el("text", { x: W - 10, y: H - 4, "text-anchor": "end" }, time(new Date(t1).toISOString())));
          return svg;
        }

        $("#device-form").addEventListener("submit", (e) => { e.preventDefault(); lookup(); });

        async function lookup() {
          const id = $("#device-id").value.trim();
          const body = $("#device-body");
          if (!id) return;
          body.textContent = "…";
          try {
            const d = await api("/v1/devices/" + encodeURIComponent(id));
            body.textContent = "";
            const p = el("p");
            p.append(el("strong", {}, d.deviceId + " "), el("span", { class: "pill " + d.status, id: "device-status" }, d.status), " risk " + d.risk + ", " + d.exposures.length + " exposure" + (d.exposures.length === 1 ? "" : "s"));
            body.append(p);
            if (d.exposures.length) {
              const t = el("table"); const tb = el("tbody"); t.append(tb);
              for (const x of d.exposures) {
                const tr = el("tr");
                tr.append(el("td", {}, x.beaconKey), el("td", {}, time(x.from)), el("td", { class: "num" }, Math.round(x.overlapSeconds / 60) + " min"));
                tr.addEventListener("click", () => showBeacon(x.beaconKey, true));
                tb.append(tr);
              }
              body.append(t);
            }
          } catch (e) { body.textContent = e.message; body.className = "error"; }
        }

        start();
        </script>
        </body>
        </html>
        """#
}
