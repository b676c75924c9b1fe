"""display: Torch7's browser display client (lua/display) and its server (`luatorch display`, run/display_server.py).

The client is checked against independent oracles: its JSON against Python's json module, its base64 against
Python's, the JPEG it sends decoded by Pillow and compared with the tensor it was given (normalized as the API
says), a grid's layout cell by cell. The server is run in a thread on a free port; the tests read back what it
holds over HTTP, as the page does. A program must go on, warned once, when no server listens."""
import base64
import io
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from run.display_server import PAGE, serving_in_thread


@pytest.fixture
def server(tmp_path):
    """A display server on a free port of 127.0.0.1 (saving to tmp_path/saved); stopped afterwards."""
    with serving_in_thread(str(tmp_path / "saved")) as s:
        yield s


def _panes(server, since=0):
    port = server.server_address[1]
    with urllib.request.urlopen("http://127.0.0.1:%d/panes?since=%d&wait=0" % (port, since), timeout=10) as r:
        return json.load(r)


def _client(rt, server):
    rt.execute("display = require 'display'; display.configure{hostname = '127.0.0.1', port = %d}"
               % server.server_address[1])


def _jpeg_pixels(src):
    from PIL import Image

    assert src.startswith("data:image/jpeg;base64,")
    im = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
    assert im.format == "JPEG"
    return np.asarray(im, dtype=np.float64) / 255.0


def test_json_of_lua_values_reads_back_in_python(rt):
    text = rt.execute("""
        local json = require 'display.json'
        return json.encode{
           s = 'quote " back \\\\ newline \\n tab \\t bell \\a utf8 é',
           list = {1, 2.5, -3e-7, 1e300, true, false},
           nested = {a = {b = {{}, {x = 1}}}},
           nan = 0 / 0, inf = math.huge, big = 2^53 + 2, neg = -17,
        }""")
    got = json.loads(text)
    assert got["s"] == 'quote " back \\ newline \n tab \t bell \x07 utf8 é'
    assert got["list"] == [1, 2.5, -3e-7, 1e300, True, False]
    assert got["nested"] == {"a": {"b": [{}, {"x": 1}]}}
    assert got["nan"] is None and got["inf"] is None
    assert got["big"] == 2.0 ** 53 + 2 and got["neg"] == -17


def test_json_refuses_what_it_cannot_write(rt):
    from pytorch_bridge import LuaError

    with pytest.raises(LuaError, match="contains itself"):
        rt.execute("local t = {}; t.me = t; return require('display.json').encode(t)")
    with pytest.raises(LuaError, match="cannot send a userdata"):
        rt.execute("return require('display.json').encode{io.stdout}")


def test_base64_matches_pythons_for_every_tail_length(rt):
    enc = rt.eval("""function(s) return require('display')._base64(s, #s) end""")
    rng = np.random.default_rng()
    for n in list(range(0, 9)) + [255, 1000, 4099]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert enc(data).encode() == base64.b64encode(data), n


def test_an_image_arrives_normalized_and_a_window_updates_in_place(rt, server):
    _client(rt, server)
    # a smooth picture (JPEG keeps it within a few levels), in a range the client must map to [0, 1]
    y, x = np.mgrid[0:24, 0:40]
    pic = np.stack([np.sin(x / 7.0) * 3 + 5, np.cos(y / 5.0) * 3 + 5, (x + y) / 64.0 * 6 + 2])
    win = rt.call(rt.eval("function(t, title) return display.image(t, {title = title}) end"),
                  rt.from_numpy(pic), "first")
    d = _panes(server)
    assert [p["id"] for p in d["panes"]] == [win] and d["panes"][0]["title"] == "first"
    got = _jpeg_pixels(d["panes"][0]["content"]["src"])
    want = ((pic - pic.min()) / (pic.max() - pic.min())).transpose(1, 2, 0)
    assert got.shape == want.shape
    assert np.abs(got - want).mean() < 0.01 and np.abs(got - want).max() < 0.08
    # opts.min / opts.max instead of the image's own range; the same window id replaces the content
    rt.call(rt.eval("function(t, w) return display.image(t, {win = w, min = 0, max = 20}) end"), rt.from_numpy(pic), win)
    d2 = _panes(server, d["seq"])
    assert [p["id"] for p in d2["panes"]] == [win] and d2["seq"] == d["seq"] + 1
    got = _jpeg_pixels(d2["panes"][0]["content"]["src"])
    assert np.abs(got - (pic / 20).transpose(1, 2, 0)).max() < 0.05
    assert len(_panes(server)["panes"]) == 1   # one window, updated


def test_a_batch_becomes_a_grid_with_grey_gaps_and_labels(rt, server):
    _client(rt, server)
    # 5 grey-level images of 3 x 8 x 8 (values i/10), whole grid normalized by display.image afterwards:
    # ceil(sqrt(5)) = 3 per row, 2 rows, the sixth cell the 0.5 background
    win = rt.execute("""
        local batch = torch.Tensor(5, 3, 8, 8)
        for i = 1, 5 do batch[i]:fill(i / 10) end
        return display.image(batch, {labels = {'a', 'b', 'c', 'd', 'e'}, win = 'grid'})""")
    assert win == "grid"
    pane = _panes(server)["panes"][0]
    got = _jpeg_pixels(pane["content"]["src"])
    assert got.shape == (16, 24, 3)
    lo, hi = 0.1, 0.5   # the grid's own range (the background 0.5 is its maximum)
    for i in range(6):
        row, col = divmod(i, 3)
        value = (i + 1) / 10 if i < 5 else 0.5
        cell = got[row * 8 + 2:row * 8 + 6, col * 8 + 2:col * 8 + 6]   # away from the JPEG's block edges
        assert abs(cell.mean() - (value - lo) / (hi - lo)) < 0.02, i
    assert pane["content"]["labels"] == [[c / 3, r / 2, "abcde"[r * 3 + c]] for r in range(2) for c in range(3)
                                         if r * 3 + c < 5]


def test_a_plot_carries_its_rows_and_options(rt, server):
    _client(rt, server)
    data = np.column_stack([np.linspace(0, 9, 10), np.random.default_rng().normal(size=(10, 2))])
    rt.call(rt.eval("function(d) return display.plot(d, {labels = {'epoch', 'loss', 'err'}, win = 'p', "
                    "title = 'curves', ylabel = 'value'}) end"), rt.from_numpy(data))
    rt.execute("display.text('a <b> & \"c\"', {win = 't', title = 'notes'})")
    rt.execute("display.plot({{1, 2}, {2, 0 / 0}}, {win = 'q'})")   # a table of rows; NaN goes as null
    panes = {p["id"]: p for p in _panes(server)["panes"]}
    p = panes["p"]
    assert p["type"] == "plot" and p["title"] == "curves"
    assert np.array_equal(np.array(p["content"]["file"]), data)
    assert p["content"]["labels"] == ["epoch", "loss", "err"] and p["content"]["xlabel"] == "epoch"
    assert p["content"]["ylabel"] == "value" and "win" not in p["content"]
    assert panes["t"]["content"] == 'a <b> & "c"' and panes["t"]["type"] == "text"
    assert panes["q"]["content"]["file"] == [[1, 2], [2, None]]


def test_saved_panes_are_complete_files(rt, server, tmp_path):
    from PIL import Image

    _client(rt, server)
    rt.execute("display.image(torch.rand(1, 10, 12), {win = 'w/1'}); display.text('x', {win = 'w/2'})")
    saved = tmp_path / "saved"
    assert sorted(p.name for p in saved.iterdir()) == ["w_1.jpg", "w_2.json"]
    assert Image.open(saved / "w_1.jpg").size == (12, 10)
    assert json.loads((saved / "w_2.json").read_text())["content"] == "x"


def test_the_server_refuses_bad_commands_with_a_reason(server):
    port = server.server_address[1]

    def post(body):
        req = urllib.request.Request("http://127.0.0.1:%d/events" % port, data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    assert post(b"{not json")[0] == 400
    code, why = post(json.dumps({"command": "pane", "type": "video", "id": "x"}).encode())
    assert code == 400 and "video" in why["error"]
    code, why = post(json.dumps({"command": "pane", "type": "text"}).encode())
    assert code == 400 and "id" in why["error"]
    assert post(json.dumps([1, 2]).encode())[0] == 400
    assert _panes(server)["panes"] == []   # nothing half-applied


def test_the_page_waits_for_a_change_and_gets_it(server):
    """The page's long poll: a request for changes after the current one returns as soon as a pane arrives."""
    port = server.server_address[1]
    got = {}

    def poll():
        t0 = time.monotonic()
        with urllib.request.urlopen("http://127.0.0.1:%d/panes?since=0&wait=10" % port, timeout=20) as r:
            got["answer"], got["seconds"] = json.load(r), time.monotonic() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.3)
    server.panes.update({"command": "pane", "type": "text", "id": "late", "content": "now"})
    t.join(15)
    assert got["answer"]["panes"][0]["id"] == "late" and got["seconds"] < 5
    with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=10) as r:
        assert b"/panes?since=" in r.read()


def test_without_a_server_the_program_goes_on_warned_once(rt, capfd):
    with socket.socket() as s:   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rt.execute("display = require 'display'; display.configure{port = %d}" % port)
    t0 = time.monotonic()
    ids = rt.execute("return display.image(torch.rand(3, 4, 4)) .. ' ' .. display.plot({{1, 2}}, {win = 7})")
    assert time.monotonic() - t0 < 5
    assert ids.endswith(" 7")
    err = capfd.readouterr().err
    assert err.count("display:") == 1 and "luatorch display" in err and "refused" in err.lower()


@pytest.mark.skipif(shutil.which("node") is None, reason="node (to parse the page's script) is not installed")
def test_the_pages_script_parses(tmp_path):
    script = PAGE.split("<script>")[1].split("</script>")[0]
    (tmp_path / "page.js").write_text(script)
    r = subprocess.run(["node", "--check", str(tmp_path / "page.js")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
