"""`luatorch display`: the browser display server that Torch7's `display` package talks to (lua/display).

Torch7 programs (dcgan.torch, pix2pix, CycleGAN, ...) call display.image/plot/text while they train; the client
POSTs each call as a JSON command to http://HOST:PORT/events, and this server keeps the latest content of every
window (pane) and shows them on one page at http://HOST:PORT/. The page asks /panes?since=N for what changed
(a long poll: the server answers as soon as something does, or after a few seconds with nothing), so a window a
script keeps updating (the same `win` id) updates in place. With --save DIR every pane is also written to DIR as
it arrives (images as <id>.jpg/.png, plots and text as <id>.json), for machines without a browser nearby.

No authentication (as the original): it listens on 127.0.0.1 unless told otherwise."""
import argparse
import base64
import contextlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PANE_TYPES = ("image", "plot", "text", "audio")
MAX_BODY = 256 << 20   # one command (a large image grid as base64) may be big; not unbounded
POLL_SECONDS = 20


class Panes:
    """The windows' latest content, each with the sequence number of its last change."""

    def __init__(self, save_dir=None):
        self.cond = threading.Condition()
        self.seq = 0
        self.panes = {}
        self.save_dir = save_dir

    def update(self, command):
        """Apply one client command (a dict); a ValueError says what is wrong with it."""
        kind = command.get("command")
        if kind != "pane":
            raise ValueError("unknown command %r (display's clients send 'pane')" % (kind,))
        if command.get("type") not in PANE_TYPES:
            raise ValueError("unknown pane type %r (one of %s)" % (command.get("type"), ", ".join(PANE_TYPES)))
        pid = command.get("id")
        if not isinstance(pid, str) or not pid:
            raise ValueError("a pane needs an id (a non-empty string)")
        with self.cond:
            self.seq += 1
            pane = {"id": pid, "type": command["type"], "title": command.get("title"),
                    "content": command.get("content"), "seq": self.seq, "time": time.time()}
            self.panes[pid] = pane
            self.cond.notify_all()
        if self.save_dir:
            save_pane(self.save_dir, pane)

    def since(self, seq, wait):
        """The panes changed after seq (waiting up to `wait` seconds for one), and the current sequence number."""
        with self.cond:
            if self.seq <= seq and wait > 0:
                self.cond.wait_for(lambda: self.seq > seq, timeout=wait)
            changed = [p for p in self.panes.values() if p["seq"] > seq]
            return sorted(changed, key=lambda p: p["seq"]), self.seq


def _file_name(pane_id):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", pane_id)[:120] or "pane"


def _replace(path, data):
    """data (bytes) as path's whole content, written beside it and renamed over it: a reader never sees half a
    file, and two requests saving one window at once each write a temporary file of their own."""
    tmp = "%s.%d-%d.tmp" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def save_pane(folder, pane):
    """One pane to disk: an image's bytes as the client encoded them, anything else as JSON."""
    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, _file_name(pane["id"]))
    content = pane["content"]
    if pane["type"] == "image" and isinstance(content, dict):
        m = re.match(r"data:image/(\w+);base64,(.*)$", content.get("src") or "", re.S)
        if m:
            ext = {"jpeg": "jpg"}.get(m.group(1), m.group(1))
            return _replace(base + "." + ext, base64.b64decode(m.group(2)))
    _replace(base + ".json", json.dumps({k: pane[k] for k in ("id", "type", "title", "content")}).encode())


def handler_for(panes):
    class Handler(BaseHTTPRequestHandler):
        server_version = "luatorch-display"

        def log_message(self, fmt, *args):   # one line per request would drown the terminal
            pass

        def _send(self, code, body, ctype="application/json"):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            if urlparse(self.path).path != "/events":
                return self._send(404, '{"error": "POST commands to /events"}')
            try:
                n = int(self.headers.get("Content-Length", ""))
            except ValueError:
                return self._send(411, '{"error": "a Content-Length is needed"}')
            if n < 0 or n > MAX_BODY:
                return self._send(413, '{"error": "a command of %d bytes is too large"}' % n)
            body = self.rfile.read(n)
            try:
                command = json.loads(body)
                if not isinstance(command, dict):
                    raise ValueError("a command is a JSON object")
                panes.update(command)
            except ValueError as e:   # (json's errors are ValueErrors too)
                return self._send(400, json.dumps({"error": str(e)}))
            self._send(200, '{"ok": true}')

        def do_GET(self):
            url = urlparse(self.path)
            if url.path in ("/", "/index.html"):
                return self._send(200, PAGE, "text/html; charset=utf-8")
            if url.path == "/panes":
                q = parse_qs(url.query)
                try:
                    seq = int(q.get("since", ["0"])[0])
                    wait = min(float(q.get("wait", [str(POLL_SECONDS)])[0]), 60.0)
                except ValueError:
                    return self._send(400, '{"error": "since and wait are numbers"}')
                changed, now = panes.since(seq, wait)
                return self._send(200, json.dumps({"seq": now, "panes": changed}))
            self._send(404, '{"error": "not found"}')

    return Handler


def serve(port=8000, hostname="127.0.0.1", save_dir=None, ready=None):
    """Run the server until interrupted; `ready` (if given) is called with the bound server before serving."""
    panes = Panes(save_dir)
    server = ThreadingHTTPServer((hostname, port), handler_for(panes))
    server.daemon_threads = True
    server.panes = panes
    if ready:
        ready(server)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


@contextlib.contextmanager
def serving_in_thread(save_dir=None, hostname="127.0.0.1"):
    """A server on a free port in a thread of this process, for the with-block (the program runners', the tests'):
    gives the bound server (its address in server_address, its windows in server.panes); stopped on leaving."""
    box, ready = {}, threading.Event()

    def on_ready(server):
        box["server"] = server
        ready.set()

    t = threading.Thread(target=serve, args=(0, hostname, save_dir, on_ready), daemon=True)
    t.start()
    if not ready.wait(30):
        raise RuntimeError("luatorch display: the server thread did not start")
    try:
        yield box["server"]
    finally:
        box["server"].shutdown()
        t.join(10)


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch display", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("port", nargs="?", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument("hostname", nargs="?", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--save", metavar="DIR", help="also write every pane to DIR as it arrives")
    a = p.parse_args(argv)

    def ready(server):
        host, port = server.server_address[:2]
        print("luatorch display: open http://%s:%d/ (scripts: display.configure{hostname='%s', port=%d}); "
              "Ctrl-C stops it" % (host, port, host, port), flush=True)

    try:
        serve(a.port, a.hostname, a.save, ready)
    except OSError as e:
        print("luatorch display: cannot listen on %s:%d: %s" % (a.hostname, a.port, e.strerror or e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print()
    return 0


PAGE = r"""<!doctype html>
<html><head><meta charset="utf-8"><title>luatorch display</title>
<style>
body { font-family: sans-serif; margin: 0; background: #eee; }
header { background: #333; color: #eee; padding: 6px 12px; font-size: 14px; }
#panes { display: flex; flex-wrap: wrap; align-items: flex-start; padding: 6px; }
.pane { background: #fff; margin: 6px; box-shadow: 0 1px 3px #999; resize: both; overflow: auto; }
.pane h3 { margin: 0; padding: 4px 8px; font-size: 13px; background: #ddd; cursor: default; }
.pane .body { padding: 6px; position: relative; }
.pane img { image-rendering: pixelated; display: block; }
.pane .label { position: absolute; font-size: 11px; background: rgba(255,255,255,.7); padding: 0 2px; }
.pane pre { margin: 0; white-space: pre-wrap; }
</style></head>
<body><header>luatorch display &mdash; <span id="status">connecting</span></header><div id="panes"></div>
<script>
"use strict";
let seq = 0;
const panes = document.getElementById('panes'), status = document.getElementById('status');
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text; return e; }
function plot(opts) {   // a line per series against the first column, as an SVG
  const rows = opts.file || [], W = 480, H = 280, L = 50, B = 30, T = 10, R = 10;
  const ns = 'http://www.w3.org/2000/svg', svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  if (!rows.length) return svg;
  const xs = rows.map(r => +r[0]), ncol = Math.max(...rows.map(r => r.length));
  let lo = Infinity, hi = -Infinity;
  rows.forEach(r => r.slice(1).forEach(v => { if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
  if (!(hi > lo)) { hi = lo + 1; lo -= 1; }
  const x0 = Math.min(...xs), x1 = Math.max(...xs) > x0 ? Math.max(...xs) : x0 + 1;
  const px = x => L + (x - x0) / (x1 - x0) * (W - L - R), py = y => H - B - (y - lo) / (hi - lo) * (H - B - T);
  const add = (tag, attrs, text) => { const e = document.createElementNS(ns, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]); if (text !== undefined) e.textContent = text;
    svg.appendChild(e); return e; };
  add('rect', {x: L, y: T, width: W - L - R, height: H - B - T, fill: 'none', stroke: '#888'});
  [lo, (lo + hi) / 2, hi].forEach(v => add('text', {x: 2, y: py(v) + 4, 'font-size': 10}, +v.toPrecision(4)));
  [x0, x1].forEach(v => add('text', {x: px(v) - 10, y: H - 14, 'font-size': 10}, +v.toPrecision(4)));
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
  const labels = opts.labels || [];
  for (let c = 1; c < ncol; c++) {
    const pts = rows.filter(r => isFinite(r[c])).map(r => px(+r[0]) + ',' + py(+r[c])).join(' ');
    add('polyline', {points: pts, fill: 'none', stroke: colors[(c - 1) % colors.length], 'stroke-width': 1.5});
    add('text', {x: L + 6, y: T + 12 * c, 'font-size': 11, fill: colors[(c - 1) % colors.length]},
        labels[c] || ('series ' + c));
  }
  add('text', {x: W / 2, y: H - 2, 'font-size': 11}, opts.xlabel || labels[0] || '');
  return svg;
}
function render(p) {
  let box = document.getElementById('pane-' + p.id);
  if (!box) { box = el('div', 'pane'); box.id = 'pane-' + p.id; panes.prepend(box); }
  box.replaceChildren(el('h3', '', p.title || p.id));
  const body = el('div', 'body'); box.appendChild(body);
  const c = p.content;
  if (p.type === 'image') {
    const img = el('img'); img.src = c.src; if (c.width) img.width = c.width; body.appendChild(img);
    img.onload = () => (c.labels || []).forEach(([x, y, t]) => { const s = el('span', 'label', t);
      s.style.left = (6 + x * img.width) + 'px'; s.style.top = (6 + y * img.height) + 'px'; body.appendChild(s); });
  } else if (p.type === 'plot') { body.appendChild(plot(c || {}));
  } else if (p.type === 'audio') { const a = el('audio'); a.controls = true; a.src = c; body.appendChild(a);
  } else { body.appendChild(el('pre', '', typeof c === 'string' ? c : JSON.stringify(c))); }
}
async function poll() {
  for (;;) {
    try {
      const r = await fetch('/panes?since=' + seq + (seq ? '' : '&wait=0'));
      const d = await r.json();
      d.panes.forEach(render); seq = d.seq;
      status.textContent = 'connected, ' + document.querySelectorAll('.pane').length + ' window(s)';
    } catch (e) {
      status.textContent = 'server unreachable, retrying';
      await new Promise(ok => setTimeout(ok, 2000));
    }
  }
}
poll();
</script></body></html>
"""

if __name__ == "__main__":
    sys.exit(main())
