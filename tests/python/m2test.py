"""Shared helpers of the Python tests (run by CTest with PYTHONPATH=python, MULTI2_LIB, M2_BIN)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))


def multi2_bin():
    """The multi2 binary CTest names (M2_BIN), else build/multi2."""
    return os.environ.get("M2_BIN") or os.path.join(ROOT, "build", "multi2")


def child_environ(extra=None):
    """The environment for a multi2 child process. Under the ASan build's preloaded interpreter
    (CMakeLists.txt) the children are instrumented binaries of their own: they get the ASan
    options the C tests run with (leak checks on), not the interpreter's preload and options."""
    env = dict(os.environ, **(extra or {}))
    if "M2_CHILD_ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = env.pop("M2_CHILD_ASAN_OPTIONS")
        env.pop("LD_PRELOAD", None)
        env.pop("PYTHONMALLOC", None)
    return env


def run_multi2(args, stdin=None, timeout=120):
    return subprocess.run([multi2_bin()] + list(args), input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=child_environ())


import http.client
import json
import signal
import time


class Server:
    """`multi2 serve --env ENV --port 0 ARGS...` for the length of a with-block; .get / .post speak
    HTTP over loopback (one keep-alive connection per thread). On exit it sends SIGTERM and checks
    that the server stopped cleanly (exit 0: under ASan, no leak and no error report)."""

    def __init__(self, env, *args, environ=None):
        self.cmd = [multi2_bin(), "serve", "--env", env, "--port", "0"] + list(args)
        self.environ = child_environ(environ)
        self.local = __import__("threading").local()
        self.conns = []          # every thread's connection, closed at the end

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.environ)
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.proc.kill()
            raise RuntimeError("multi2 serve did not start: %r %s" % (line, self.proc.stderr.read()))
        host, port = line.split("http://")[1].split("/")[0].rsplit(":", 1)   # 127.0.0.1:P or [::1]:P
        self.host, self.port = host.strip("[]"), int(port)
        return self

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            self.conns.append(c)
        return c

    def request(self, method, path, body=None, raw=None, headers=None):
        """(status, decoded JSON) of one request; body: an object sent as JSON, raw: bytes as they are."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        for attempt in (0, 1):   # a keep-alive connection the server closed is opened again once
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=headers or {"Content-Type": "application/json"})
                r = c.getresponse()
                text = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    self.local.conn = None
                return r.status, json.loads(text)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                c.close()
                self.local.conn = None
                if attempt:
                    raise

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def __exit__(self, *exc):
        for c in self.conns:
            c.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        self.stderr = err
        if exc[0] is None and self.proc.returncode != 0:
            raise AssertionError("multi2 serve exited %d:\n%s" % (self.proc.returncode, err[-4000:]))
        return False


def sanitized():
    """True where the ASan build runs the server tests alone: the ctypes side is not loaded there
    (the ctypes tests run in that build too, in an interpreter with ASan preloaded)."""
    return os.environ.get("M2_SANITIZE") == "1"
