#!/usr/bin/env python3
"""chat_pty.py — `wick run --chat` on a terminal (a pseudo-terminal made
here), as a user types into it:

  editing   (where libedit.so.2 can be loaded) a line edited with the arrow
            keys ("/hlp", left twice, "e": /help) and the history's last
            line again (up arrow) both run /help; Ctrl-D at an empty
            prompt leaves with status 0. Without line editing the first
            line would reach the model as "/hlp\\x1b[D\\x1b[De".
  interrupt Ctrl-C during a reply stops the reply and brings the prompt
            back; Ctrl-C at the prompt then ends the program (status 130).

Usage: chat_pty.py WICK MODEL. Prints one line per check ("ok NAME" or
"FAIL NAME: why") and exits 1 when a check failed.
"""
import ctypes
import os
import pty
import select
import sys
import time

WICK, MODEL = sys.argv[1], sys.argv[2]
failed = 0


def check(name, good, why=""):
    global failed
    if good:
        print("ok " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))


class Chat:
    """wick run --chat on a new pseudo-terminal; everything it writes is in self.seen."""

    def __init__(self, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(WICK, [WICK, "run", MODEL, "--chat", "--device", "cpu", "--temp", "0", *args])
        self.seen = b""
        self.eof = False
        self.status = None

    def read(self, timeout):
        """What the program wrote within timeout seconds, into self.seen."""
        if self.eof:
            time.sleep(timeout)
            return
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return
        try:
            data = os.read(self.fd, 65536)
        except OSError:   # the program is gone
            data = b""
        self.seen += data
        self.eof = not data

    def wait_for(self, pred, timeout=120):
        end = time.time() + timeout
        while not pred(self.seen):
            if self.eof or time.time() > end:
                return False
            self.read(min(0.5, max(0.0, end - time.time())))
        return True

    def send(self, data):
        os.write(self.fd, data)

    def reap(self, timeout):
        """The program's exit status (-N: killed by signal N; None: still
        running after timeout seconds, then killed)."""
        end = time.time() + timeout
        while self.status is None and time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
            else:
                self.read(0.1)
        if self.status is None:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)
        return self.status

    def tail(self):
        return self.seen[-400:].decode("utf-8", "replace")


def has_libedit():
    try:
        ctypes.CDLL("libedit.so.2")
        return True
    except OSError:
        return False


HELP = b"forget the conversation"

# the prompt, "> ", is written once the terminal is set up for the line:
# each key is sent once the prompt count says wick is waiting for it
if has_libedit():
    c = Chat("-n", "4")
    check("pty_prompt", c.wait_for(lambda s: s.count(b"> ") >= 1), c.tail())
    c.send(b"/hlp\x1b[D\x1b[De\r")
    check("pty_edit_left_arrow", c.wait_for(lambda s: s.count(HELP) >= 1 and s.count(b"> ") >= 2, 30), c.tail())
    c.send(b"\x1b[A\r")
    check("pty_history_up_arrow", c.wait_for(lambda s: s.count(HELP) >= 2 and s.count(b"> ") >= 3, 30), c.tail())
    check("pty_no_reply", b"prompt:" not in c.seen, "a line reached the model: " + c.tail())
    time.sleep(0.2)
    c.send(b"\x04")
    check("pty_ctrl_d_exit_0", c.reap(30) == 0, "status %s; %r" % (c.status, c.seen[-300:]))
else:
    print("skip pty_edit: no libedit.so.2 (apt-get install libedit2)")

c = Chat("-n", "0", "--ignore-eos", "--ctx", "1024")
check("pty_prompt_2", c.wait_for(lambda s: s.count(b"> ") >= 1), c.tail())
c.send(b"Tell me a long story about a dragon.\r")
start = len(c.seen)
check("pty_reply_starts", c.wait_for(lambda s: len(s) > start + 150), c.tail())
c.send(b"\x03")
check("pty_ctrl_c_stops_reply", c.wait_for(lambda s: b"(stopped" in s, 60), c.tail())
check("pty_prompt_again", c.wait_for(lambda s: b"context:" in s and s.count(b"> ") >= 2, 30), c.tail())
time.sleep(0.2)
c.send(b"\x03")
check("pty_ctrl_c_at_prompt_exits", c.reap(30) == 130, "status %s; %s" % (c.status, c.tail()))
sys.exit(1 if failed else 0)
