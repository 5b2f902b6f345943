#!/usr/bin/env python3
"""Run several servers in one container and stop when any of them stops.

Used by deploy/openshift/vllm-small.yaml, where one pod on one GPU runs four `vllm serve`
processes. Kubernetes restarts a container when its main process exits, not when one of its
children dies. This supervisor is the main process: as soon as one child exits, it stops the
others and exits non-zero, so Kubernetes restarts the whole pod. Python standard library only.

Usage:
  vllm-supervisor.py SPEC.json        run the children described in SPEC.json ("-" = stdin)
  vllm-supervisor.py --check SPEC.json
                                      exit 0 when every child's ready_url answers 200, else 1
                                      (for readiness and startup probes)
  vllm-supervisor.py --help

SPEC.json:
  {
    "grace_seconds": 25,            # after SIGTERM, wait this long before SIGKILL (default 25)
    "ready_timeout_seconds": 3600,  # longest wait for one child's ready_url (default 3600)
    "ready_poll_seconds": 2,        # ready_url polling interval (default 2)
    "children": [                   # started in this order
      {"name": "judge-small",                          # prefix of its output lines
       "argv": ["/bin/sh", "-c", "exec vllm serve ..."],
       "env": {"KEY": "value"},                        # optional, added to the environment
       "ready_url": "http://127.0.0.1:8001/health"}    # optional, see below
    ]
  }

Behaviour:
  * Children are started in the order given. When a child has a ready_url, the next child is
    started only after that URL answers 200. vLLM instances sharing one GPU must not profile
    their memory at the same time: each would count the others' model loading as its own.
  * Each output line of a child (stdout and stderr) is printed as "[name] line". The
    supervisor's own lines start with "[supervisor]". PYTHONUNBUFFERED=1 is set for children
    unless the spec or the environment sets it.
  * Each child runs in its own session (process group), so signals reach its subprocesses too.
  * When a child exits (with any status), the others get SIGTERM, then SIGKILL after
    grace_seconds, and the supervisor exits with the child's status if that was non-zero,
    128 + N if the child was killed by signal N, and 1 if it exited with 0.
  * SIGTERM or SIGINT to the supervisor is forwarded to every child (same escalation); the
    supervisor then exits 0.
  * A child that does not become ready within ready_timeout_seconds counts as failed (exit 1).
  * As PID 1 of a container it also reaps orphaned grandchildren.
  * A bad spec is reported on stderr with exit status 2.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

OUT_LOCK = threading.Lock()


def say(line):
    """Print one supervisor line (thread-safe, flushed)."""
    emit(b"[supervisor] " + line.encode("utf-8", "replace") + b"\n")


def emit(data):
    with OUT_LOCK:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


class SpecError(Exception):
    pass


def _number(spec, key, default):
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SpecError("%s: expected a non-negative number, got %r" % (key, value))
    return float(value)


def load_spec(path):
    """Read and validate a spec; raises SpecError."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, "r", encoding="utf-8") as handle:
                text = handle.read()
    except OSError as err:
        raise SpecError("cannot read %s: %s" % (path, err))
    try:
        spec = json.loads(text)
    except ValueError as err:
        raise SpecError("%s: not JSON: %s" % (path, err))
    if isinstance(spec, list):
        spec = {"children": spec}
    if not isinstance(spec, dict):
        raise SpecError("expected an object with 'children'")
    unknown = sorted(set(spec) - {"children", "grace_seconds", "ready_timeout_seconds", "ready_poll_seconds"})
    if unknown:
        raise SpecError("unknown key(s): %s" % ", ".join(unknown))
    children = spec.get("children")
    if not isinstance(children, list) or not children:
        raise SpecError("children: expected a non-empty list")
    names = set()
    for i, child in enumerate(children):
        where = "children[%d]" % i
        if not isinstance(child, dict):
            raise SpecError("%s: expected an object" % where)
        unknown = sorted(set(child) - {"name", "argv", "env", "ready_url"})
        if unknown:
            raise SpecError("%s: unknown key(s): %s" % (where, ", ".join(unknown)))
        name = child.get("name")
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise SpecError("%s.name: expected a non-empty string without spaces" % where)
        if name in names:
            raise SpecError("%s.name: duplicate name %r" % (where, name))
        names.add(name)
        argv = child.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise SpecError("%s.argv: expected a non-empty list of strings" % where)
        env = child.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise SpecError("%s.env: expected an object of strings" % where)
        url = child.get("ready_url")
        if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
            raise SpecError("%s.ready_url: expected an http(s) URL" % where)
    return {
        "children": children,
        "grace_seconds": _number(spec, "grace_seconds", 25),
        "ready_timeout_seconds": _number(spec, "ready_timeout_seconds", 3600),
        "ready_poll_seconds": _number(spec, "ready_poll_seconds", 2),
    }


# Probes go straight to the URL: a proxy from the environment (HTTP_PROXY) must not be used.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def is_ready(url, timeout=2.0):
    """True when GET url answers 200; never raises for network errors."""
    try:
        with DIRECT.open(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def exit_code_of(status):
    """The shell-style exit code of a waitpid status."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 1


class Child:
    def __init__(self, spec):
        self.name = spec["name"]
        self.argv = spec["argv"]
        self.env = spec.get("env", {})
        self.ready_url = spec.get("ready_url")
        self.proc = None
        self.code = None
        self.reader = None

    @property
    def running(self):
        return self.proc is not None and self.code is None

    def start(self):
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.env)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._pump, name="out-" + self.name, daemon=True)
        self.reader.start()
        say("started %s (pid %d)" % (self.name, self.proc.pid))

    def _pump(self):
        prefix = ("[%s] " % self.name).encode("utf-8", "replace")
        stream = self.proc.stdout
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            emit(prefix + line)
        stream.close()

    def signal_group(self, signum):
        """Signal the child's process group (the child and its subprocesses)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def reaped(self, status):
        self.code = exit_code_of(status)
        self.proc.returncode = self.code  # so subprocess never waits for it again


class Supervisor:
    def __init__(self, spec):
        self.children = [Child(c) for c in spec["children"]]
        self.by_pid = {}
        self.grace = spec["grace_seconds"]
        self.ready_timeout = spec["ready_timeout_seconds"]
        self.ready_poll = spec["ready_poll_seconds"]
        self.stop_signal = None

    def on_signal(self, signum, _frame):
        if self.stop_signal is None:
            self.stop_signal = signum

    def reap(self):
        """Reap every exited process; return the first of our children that exited, if any."""
        first = None
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return first
            if pid == 0:
                return first
            child = self.by_pid.get(pid)
            if child is not None and child.code is None:
                child.reaped(status)
                if first is None:
                    first = child

    def stop_all(self):
        """SIGTERM every running child, SIGKILL what is left after the grace period, reap all."""
        running = [c for c in self.children if c.running]
        for child in running:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while any(c.running for c in self.children) and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.05)
        for child in self.children:
            if child.running:
                say("%s did not stop within %gs: SIGKILL" % (child.name, self.grace))
                child.signal_group(signal.SIGKILL)
        while any(c.running for c in self.children):
            self.reap()
            time.sleep(0.05)
        for child in self.children:
            # whatever is left of a child's process group (subprocesses that outlived it)
            child.signal_group(signal.SIGKILL)
        self.reap()
        for child in self.children:
            if child.reader is not None:
                child.reader.join(timeout=2)

    def check(self):
        """One pass of monitoring. Returns an exit code when the supervisor must stop, else None."""
        exited = self.reap()
        if exited is not None:
            say("%s exited with status %d; stopping the others" % (exited.name, exited.code))
            self.stop_all()
            return exited.code if exited.code != 0 else 1
        if self.stop_signal is not None:
            say("received signal %d; stopping all children" % self.stop_signal)
            self.stop_all()
            return 0
        return None

    def run(self):
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        for child in self.children:
            code = self.check()
            if code is not None:
                return code
            try:
                child.start()
            except OSError as err:
                say("cannot start %s: %s" % (child.name, err))
                self.stop_all()
                return 1
            self.by_pid[child.proc.pid] = child
            if child.ready_url is None:
                continue
            deadline = time.monotonic() + self.ready_timeout
            while True:
                code = self.check()
                if code is not None:
                    return code
                if is_ready(child.ready_url):
                    say("%s is ready (%s)" % (child.name, child.ready_url))
                    break
                if time.monotonic() >= deadline:
                    say("%s not ready after %gs (%s); stopping all" % (child.name, self.ready_timeout, child.ready_url))
                    self.stop_all()
                    return 1
                self.sleep(self.ready_poll)
        say("all %d children started" % len(self.children))
        while True:
            code = self.check()
            if code is not None:
                return code
            self.sleep(0.2)

    def sleep(self, seconds):
        """Sleep in short steps so exits and signals are noticed promptly."""
        end = time.monotonic() + seconds
        while self.stop_signal is None and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))


def run_check(spec):
    failed = [c["name"] for c in spec["children"] if c.get("ready_url") and not is_ready(c["ready_url"])]
    for name in failed:
        sys.stderr.write("not ready: %s\n" % name)
    return 1 if failed else 0


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    check = bool(argv) and argv[0] == "--check"
    rest = argv[1:] if check else argv
    if len(rest) != 1 or (rest[0].startswith("-") and rest[0] != "-"):
        sys.stderr.write("usage: vllm-supervisor.py [--check] SPEC.json (see --help)\n")
        return 2
    try:
        spec = load_spec(rest[0])
    except SpecError as err:
        sys.stderr.write("vllm-supervisor: bad spec: %s\n" % err)
        return 2
    if check:
        return run_check(spec)
    return Supervisor(spec).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
