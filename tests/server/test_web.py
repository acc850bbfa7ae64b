#!/usr/bin/env python3
"""test_web.py — the chat page of `wick serve` (GET /, src/server/web/index.html)
in headless Chromium, on the real SmolLM2-135M-Instruct (run by `make test`).

Chromium is Debian's (apt-get install chromium), driven through the DevTools
protocol over a pipe (--remote-debugging-pipe: JSON messages ending in a
NUL byte on descriptors 3 and 4), with Python's standard library only. The
checks: / is HTML with its security headers; the page loads and shows the
model's name; a message typed and sent with Enter streams a reply whose text
equals the server's greedy reply to the same chat (temperature 0 set on the
page); a second message, sent with the button, carries the history (its reply
equals the greedy reply to the three-message chat); Stop during a long reply
ends it on the page (the text stops growing) and the server cancels the
generation (the connection closes); with --api-key the page asks for the key,
takes it, and replies as the API does.

Skipped with a note without the model (unless WICK_REQUIRE_MODEL=1) or
without Chromium (unless WICK_REQUIRE_TEST_DEPS=1, as CI sets); WICK_CHROMIUM
names the browser when it is not chromium on the PATH.
Usage: test_web.py [path/to/wick]. Ends with "N passed, N failed"; exits 1
on any failure. All traffic goes to 127.0.0.1, every wait is bounded, and
every server and browser started is killed at the end.
"""
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402 (the harness: Server, request, post, metric, check)
from test_server import check, metric, post, request  # noqa: E402


def find_chromium():
    if os.environ.get("WICK_CHROMIUM"):
        return os.environ["WICK_CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    """Headless Chromium and one page of it, over the DevTools protocol."""

    def __init__(self, exe):
        self.dir = tempfile.mkdtemp(prefix="wick-chromium.")
        self.log = open(os.path.join(self.dir, "stderr.log"), "w+b")
        cmd_r, cmd_w = os.pipe()    # our commands: the browser reads them on 3
        res_r, res_w = os.pipe()    # its answers and events: written on 4
        # the child's ends above 4, so that putting them on 3 and 4 clobbers neither
        child_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(res_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(res_w)

        def fds():
            os.dup2(child_r, 3)
            os.dup2(child_w, 4)
        # --no-sandbox: CI runs as root, where Chromium's sandbox does not start
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", f"--user-data-dir={self.dir}/profile", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-default-apps", "--mute-audio", "--window-size=1000,800", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, close_fds=False, preexec_fn=fds)
        os.close(child_r)
        os.close(child_w)
        self.w, self.r = cmd_w, res_r
        self.buf = b""
        self.next_id = 0
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method, params=None, session=None, timeout=60):
        """A command's result (its error raised)."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not False and (session or self.session):
            msg["sessionId"] = session or self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" in self.buf:
                raw, _, self.buf = self.buf.partition(b"\0")
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m.get("result", {})
            ready, _, _ = select.select([self.r], [], [], max(0.0, deadline - time.time()))
            if ready:
                part = os.read(self.r, 1 << 20)
                if not part:
                    raise RuntimeError(f"chromium closed the pipe: {self.stderr()[-1000:]}")
                self.buf += part
        raise RuntimeError(f"{method}: no answer in {timeout} s")

    def js(self, expr):
        """The value of a JavaScript expression in the page (a promise awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr, timeout=60, every=0.05):
        """Until expr is truthy; its value, or None at the timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.js(expr)
            if v:
                return v
            time.sleep(every)
        return None

    def click(self, element_id):
        """A real mouse click in the middle of the element."""
        box = self.js(f"(() => {{ const r = document.getElementById({element_id!r}).getBoundingClientRect();"
                      f" return [r.left + r.width / 2, r.top + r.height / 2]; }})()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def type_into(self, element_id, text):
        self.js(f"document.getElementById({element_id!r}).focus()")
        self.call("Input.insertText", {"text": text})

    def set_field(self, element_id, value):
        """A settings field's value, as a person would leave it (a change event)."""
        self.js(f"(() => {{ const e = document.getElementById({element_id!r}); e.value = {value!r};"
                f" e.dispatchEvent(new Event('change')); }})()")

    def press_enter(self):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter",
                                                 "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13,
                                                 **({"text": "\r"} if kind == "keyDown" else {})})

    def open(self, url):
        self.call("Page.navigate", {"url": url})
        return self.wait("document.readyState === 'complete' && document.body.dataset.ready === '1'", 60)

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def close(self):
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


LAST = "[...document.querySelectorAll('#log .msg.assistant')].pop()"


def last_reply(b):
    """(text, finish, page state) of the last reply on the page."""
    return b.js(f"(() => {{ const e = {LAST}; return e ? [e.querySelector('.text').textContent,"
                f" e.dataset.finish || '', document.body.dataset.state] : ['', '', document.body.dataset.state]; }})()")


def wait_reply(b, timeout=180):
    """The last reply once it has ended: (text, finish); and the lengths its
    text had while it streamed."""
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        text, finish, state = last_reply(b)
        if not seen or seen[-1] != len(text):
            seen.append(len(text))
        if finish and state == "idle":
            return text, finish, seen
        time.sleep(0.03)
    return None, None, seen


def greedy(port, messages, max_tokens, headers=None):
    status, r = post(port, "/v1/chat/completions", {"messages": messages, "max_tokens": max_tokens,
                                                    "temperature": 0}, headers=headers)
    return r["choices"][0]["message"]["content"] if status == 200 else f"(status {status}: {r!r:.200})"


def page_checks(b, port, model_id):
    url = f"http://127.0.0.1:{port}/"
    status, data, hdr = request(port, "GET", "/")
    check("page_served", status == 200 and hdr.get("content-type", "").startswith("text/html") and
          b"<title>wick</title>" in data, f"{status} {hdr} {data[:100]!r}")
    check("page_headers", "default-src 'none'" in hdr.get("content-security-policy", "") and
          hdr.get("x-content-type-options") == "nosniff", hdr)
    status, data, hdr = request(port, "HEAD", "/")
    check("page_head", status == 200 and data == b"", status)
    if not check("page_loads", b.open(url), f"the page did not get ready: {b.stderr()[-500:]}"):
        return
    check("page_model_name", b.js("document.getElementById('model').textContent") == model_id,
          b.js("document.getElementById('model').textContent"))
    check("page_no_key_field", b.js("document.getElementById('key_label').hidden") is True and
          b.js("document.body.dataset.needsKey") == "0", "the key field is shown on a server without a key")

    # the settings, then a message typed and sent with Enter
    b.click("toggle")
    check("page_settings_open", b.js("!document.getElementById('settings').hidden"), "Settings did not open")
    b.set_field("temperature", "0")
    b.set_field("max_tokens", "24")
    q1, q2 = "Name a color.", "Name another one."
    b.type_into("input", q1)
    b.press_enter()
    text1, finish1, seen = wait_reply(b)
    want1 = greedy(port, [{"role": "user", "content": q1}], 24)
    check("page_reply", text1 == want1 and text1, f"page {text1!r}, API {want1!r}")
    check("page_reply_finish", finish1 in ("stop", "length"), finish1)
    check("page_input_cleared", b.js("document.getElementById('input').value") == "", "the input kept the text")
    check("page_user_message", b.js("document.querySelector('#log .msg.user .text').textContent") == q1,
          "the user's message is not shown")
    # the history: the second reply is the reply to the whole chat
    b.type_into("input", q2)
    b.click("send")
    text2, finish2, _ = wait_reply(b)
    want2 = greedy(port, [{"role": "user", "content": q1}, {"role": "assistant", "content": want1},
                          {"role": "user", "content": q2}], 24)
    check("page_history", text2 == want2 and text2, f"page {text2!r}, API {want2!r}")
    check("page_messages_shown", b.js("document.querySelectorAll('#log .msg').length") == 4,
          b.js("document.querySelectorAll('#log .msg').length"))

    # Stop during a long reply: the page stops, the server cancels
    ts_idle(port)
    cancelled0 = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    b.click("new")
    b.set_field("max_tokens", "600")
    b.type_into("input", "Write a very long story about a dragon who learns to cook, with many chapters.")
    b.press_enter()
    started = b.wait(f"(() => {{ const e = {LAST}; return e && e.querySelector('.text').textContent.length > 20"
                     " && document.body.dataset.state === 'busy'; })()", 120)
    check("page_stop_streaming", started, f"no streamed text while busy: {last_reply(b)!r:.200}")
    b.click("stop")
    text3, finish3, _ = wait_reply(b, 30)
    check("page_stopped", finish3 == "stopped" and text3, f"finish {finish3!r}, text {text3!r:.100}")
    time.sleep(1.0)
    check("page_stopped_stays", last_reply(b)[0] == text3, "the text grew after Stop")
    cancelled = cancelled0
    deadline = time.time() + 30
    while time.time() < deadline and cancelled == cancelled0:
        time.sleep(0.1)
        cancelled = metric(port, 'wick_generations_finished_total{reason="cancelled"}') or 0
    check("page_stop_cancels", cancelled == cancelled0 + 1, f"cancelled {cancelled0} -> {cancelled}")
    check("page_stop_nothing_left", ts_idle(port), "a generation is left")
    check("page_buttons_after_stop", b.js("document.getElementById('stop').disabled && "
                                          "!document.getElementById('send').disabled"), "buttons")


def ts_idle(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline and metric(port, "wick_generations_in_flight") != 0:
        time.sleep(0.1)
    return metric(port, "wick_generations_in_flight") == 0


def key_checks(b, model):
    srv = ts.Server(model, "--api-key", "pagekey")
    try:
        port = srv.port
        url = f"http://127.0.0.1:{port}/"
        if not check("key_page_loads", b.open(url), "the page did not get ready"):
            return
        check("key_page_asks", b.js("document.body.dataset.needsKey") == "1" and
              not b.js("document.getElementById('settings').hidden") and
              not b.js("document.getElementById('key_label').hidden"), "the page did not ask for the key")
        b.type_into("api_key", "pagekey")
        b.js("document.getElementById('api_key').dispatchEvent(new Event('change'))")
        check("key_page_takes", b.wait("document.body.dataset.needsKey === '0' && "
                                       "document.getElementById('model').textContent !== ''", 30),
              "the key was not taken")
        b.set_field("temperature", "0")
        b.set_field("max_tokens", "16")
        b.type_into("input", "Say hello.")
        b.press_enter()
        text, finish, _ = wait_reply(b)
        want = greedy(port, [{"role": "user", "content": "Say hello."}], 16,
                      headers={"Authorization": "Bearer pagekey"})
        check("key_page_reply", text == want and text, f"page {text!r}, API {want!r}")
    finally:
        srv.kill()


def main():
    model = ts.model_path()
    require_deps = os.environ.get("WICK_REQUIRE_TEST_DEPS", "0") != "0"
    exe = find_chromium()
    if not os.path.isfile(model) or not exe:
        if not os.path.isfile(model) and os.environ.get("WICK_REQUIRE_MODEL", "0") != "0":
            check("model", False, f"no {model} (WICK_REQUIRE_MODEL is set; tools/fetch-default-model.sh)")
        elif not exe and require_deps:
            check("chromium", False, "no chromium (WICK_REQUIRE_TEST_DEPS is set; apt-get install chromium)")
        else:
            print(f"skip server web page: {'no ' + model if not os.path.isfile(model) else 'no chromium'} "
                  "(tools/fetch-default-model.sh; apt-get install chromium)")
        print(f"{ts.passed} passed, {ts.failed} failed")
        return 1 if ts.failed else 0
    srv = b = None
    try:
        srv = ts.Server(model)
        mid = os.path.basename(model)
        mid = mid[:-5] if mid.endswith(".gguf") else mid
        b = Browser(exe)
        page_checks(b, srv.port, mid)
        srv.kill()
        srv = None
        key_checks(b, model)
    except Exception as e:  # noqa: BLE001 (a failure, with what happened)
        check("run", False, f"{e!r} {b.stderr()[-1000:] if b else ''}")
    finally:
        if b:
            b.close()
        if srv:
            srv.kill()
    print(f"{ts.passed} passed, {ts.failed} failed")
    return 1 if ts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
