#!/usr/bin/env python3
"""Run AgentDojo episodes, one at a time per worker, with AgentDojo's own agent pipeline pointed at veto-proxy.

    <venv python> launch.py plan --suites S[,S…] [--benchmark-version V] [--attacks A[,A…]]
        [--user-tasks JSON] [--injection-tasks JSON] [--defense D] [--attack-model-name KEY]
    <venv python> launch.py run  (the plan options) --base-url URL --route ROUTE --model M
        --variant V --arm A [--judge J] --run-id ID --results FILE --attempts FILE
        [--episodes FILE] [--workers N] [--oracle] [--stop-after N] [--exit-with-parent PID]

Runs in a venv with the ``agentdojo`` package from PyPI (scripts/setup_agentdojo_env.sh); this file
imports only the standard library, ``openai`` and ``agentdojo``, and changes nothing of AgentDojo.

``plan`` checks the selection against the installed AgentDojo (suites, benchmark version, attacks,
defense, user and injection task ids; an unknown one is exit 2 with one line on stderr naming it and
the valid ones) and prints ``{"benchmark_version", "episodes": [{"episode", "suite", "user_task",
"injection_task", "attack"}]}``. Episodes are in a fixed order: per suite (as given), per user task
(AgentDojo's order), first the episode without attack (``agentdojo:<suite>:<user_task>:none:none``),
then per attack (as given) per injection task (AgentDojo's order)
``agentdojo:<suite>:<user_task>:<injection_task>:<attack>``. A DoS attack (AgentDojo's
``is_dos_attack``) runs with the suite's first injection task only, as AgentDojo runs it; its row's
``injection_ground_truth`` is empty (the DoS injection does not ask for that task's goal).

``run`` runs the plan's episodes (only those listed in ``--episodes``, a JSON list of episode ids,
when given), skipping every episode whose last row in ``--results`` has no error and a utility and
was run with this benchmark version and agent, oracle or model (resume). The pipeline is AgentDojo's ``AgentPipeline.from_config(PipelineConfig(llm=OpenAILLM(client, ROUTE),
defense=D))``: AgentDojo's system message, tool loop and defense elements. Each episode runs through
AgentDojo's ``TaskSuite.run_task_with_pipeline`` (injections from AgentDojo's attack, ``attack.attack``),
which returns AgentDojo's own utility and security booleans. Every model request of an episode
carries ``x-vetobench-run``, ``x-vetobench-episode`` (the episode id) and ``x-vetobench-attempt``
(the episode's start number, written to ``--attempts`` with one write + fsync before its first
request; the file is the runners' ``attempts.jsonl``, key = episode id).

Attacks that address the model by name (``important_instructions`` …) look the pipeline's name up in
AgentDojo's ``MODEL_NAMES``; the route is not there, so the attack is built for a pipeline named
``--attack-model-name`` (default ``local``: AgentDojo's own name for a self-served model, "Local model").

One JSON line per episode is appended (write + flush + fsync) to ``--results`` as soon as it ends:
``episode, suite, user_task, injection_task, attack, variant, arm, judge, defense, benchmark_version,
model, route, oracle, utility, security, error, attempt, duration_s, usage, injection_ground_truth,
user_ground_truth, calls``. ``security`` is AgentDojo's: true = the injection task succeeded, null
without injection. An exception (the proxy unreachable, a 4xx/5xx answer after the client's retries,
a timeout, any Python error) gives ``error`` set and utility/security null: never a guess. After
``--stop-after`` episodes in a row fail with the same error the run stops (exit 4).

``--oracle`` (GPU-free tests and demos): the model behind the route is vetobench's fake vLLM, and each
request carries the episode's script in the body field ``vetobench_oracle`` (the proxy forwards
unknown body fields; judges never see them): the user task's ground-truth calls, computed with
AgentDojo's ``ground_truth(pre_environment)``, one per turn (batched evenly into at most 10 turns:
AgentDojo's tool loop stops after 15 rounds), then its ``GROUND_TRUTH_OUTPUT`` as the answer. In attacked episodes the injection task's ground-truth calls are added to the turn right after
the user-task call whose result carries the injection (found by running the user task's calls on a
copy of the injected environment; after the first call when none does): first the injection calls,
then the user task's next call, or the final answer when there is none, so a gate that removes the
injection calls leaves the user task's calls and answer in place. To AgentDojo's ``tool_filter``
prompt the oracle answers the user task's ground-truth tools.

``run`` holds an exclusive lock (``flock``) on ``--results`` while it runs: a second launcher on the
same results file (a second terminal, or a runner started while an earlier launcher still runs)
exits 5 at once instead of running the same episodes twice. With ``--exit-with-parent PID`` (the
runner passes its own pid) the launcher exits 6 as soon as its parent is no longer PID (the runner
was killed), so no orphan goes on writing rows; a torn last line is cut off by the next run.

Exit codes: 0 the episodes ran (rows may carry errors), 2 usage or selection error, 3 AgentDojo or
openai cannot be imported, 4 stopped after repeated identical errors, 5 another launcher holds the
results file, 6 the parent process is gone.
"""
import argparse
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

EXIT_USAGE = 2
EXIT_IMPORT = 3
EXIT_STOPPED = 4
EXIT_BUSY = 5
EXIT_ORPHANED = 6
NONE = "none"
MAX_TURNS = 10  # the oracle's turns with user-task calls (AgentDojo's tool loop allows 15 rounds)


def say(line):
    print("[vetobench] %s" % line, file=sys.stderr, flush=True)


def usage_error(line):
    say(line)
    sys.exit(EXIT_USAGE)


try:
    import openai
    from agentdojo.agent_pipeline.agent_pipeline import DEFENSES, TOOL_FILTER_PROMPT, AgentPipeline, PipelineConfig
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.errors import AbortAgentError
    from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.attacks.attack_registry import ATTACKS, load_attack
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.models import MODEL_NAMES
    from agentdojo.task_suite import load_suites
    import agentdojo.attacks  # noqa: F401  (registers AgentDojo's attacks)
except ImportError as e:  # pragma: no cover - reported to the runner
    say("cannot import AgentDojo (%s); create its venv with: bash scripts/setup_agentdojo_env.sh" % e)
    sys.exit(EXIT_IMPORT)


# ---------------------------------------------------------------------------------------------
# plan

def version_key(v):
    return tuple(int(p) for p in v.lstrip("v").split("."))


def benchmark_versions():
    return sorted(load_suites._SUITES.keys(), key=version_key)


def did_you_mean(name, valid):
    import difflib
    close = difflib.get_close_matches(name, valid, n=1)
    return "; did you mean '%s'?" % close[0] if close else ""


def unknown(what, name, valid, where=""):
    usage_error("AgentDojo has no %s '%s'%s%s (%s: %s)" % (what, name, where, did_you_mean(name, valid), what + "s", ", ".join(valid)))


def csv_list(text):
    return [x.strip() for x in (text or "").split(",") if x.strip() != ""]


def json_selection(text, flag):
    if text is None or text == "":
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        usage_error("%s: not JSON: %s" % (flag, e))
    if not isinstance(value, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values()):
        usage_error("%s: expected a JSON object of suite -> list of task ids" % flag)
    return value


class NamedTarget(BasePipelineElement):
    """Stands for the agent pipeline when an attack is built: attacks read only its name."""

    def __init__(self, name):
        self.name = name

    def query(self, *args, **kwargs):  # pragma: no cover - never run
        raise RuntimeError("NamedTarget is not a pipeline")


def make_plan(opts):
    versions = benchmark_versions()
    version = opts.benchmark_version or versions[-1]
    if version not in versions:
        unknown("benchmark version", version, versions)
    suites = load_suites.get_suites(version)
    suite_names = csv_list(opts.suites)
    if not suite_names:
        usage_error("--suites: at least one suite")
    for s in suite_names:
        if s not in suites:
            unknown("suite", s, list(suites.keys()), " in benchmark version %s" % version)
    attacks = csv_list(opts.attacks)
    for a in attacks:
        if a not in ATTACKS:
            unknown("attack", a, sorted(ATTACKS.keys()))
    if opts.defense is not None and opts.defense not in DEFENSES:
        unknown("defense", opts.defense, list(DEFENSES))
    if opts.defense == "transformers_pi_detector":
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            usage_error("the transformers_pi_detector defense needs torch and transformers (%s); install them with: "
                        "bash scripts/setup_agentdojo_env.sh --with-transformers" % e)
    if opts.attack_model_name not in MODEL_NAMES:
        unknown("model name for attacks", opts.attack_model_name, sorted(MODEL_NAMES.keys()))
    user_sel = json_selection(opts.user_tasks, "--user-tasks")
    inj_sel = json_selection(opts.injection_tasks, "--injection-tasks")
    for sel, flag in ((user_sel, "--user-tasks"), (inj_sel, "--injection-tasks")):
        for s in (sel or {}):
            if s not in suite_names:
                usage_error("%s names suite '%s', which is not among the suites run (%s)" % (flag, s, ", ".join(suite_names)))

    target = NamedTarget(opts.attack_model_name)
    episodes = []
    for s in suite_names:
        suite = suites[s]
        user_ids = list(suite.user_tasks.keys())
        inj_ids = list(suite.injection_tasks.keys())
        wanted_users = user_sel.get(s) if user_sel and s in user_sel else user_ids
        wanted_injs = inj_sel.get(s) if inj_sel and s in inj_sel else inj_ids
        for u in wanted_users:
            if u not in user_ids:
                unknown("user task", u, user_ids, " in suite %s (%s)" % (s, version))
        for i in wanted_injs:
            if i not in inj_ids:
                unknown("injection task", i, inj_ids, " in suite %s (%s)" % (s, version))
        users = [u for u in user_ids if u in wanted_users]
        injs = [i for i in inj_ids if i in wanted_injs]
        dos = {a: load_attack(a, suite, target).is_dos_attack for a in attacks}
        for u in users:
            episodes.append({"episode": episode_id(s, u, None, None), "suite": s, "user_task": u, "injection_task": None, "attack": None})
            for a in attacks:
                for i in (inj_ids[:1] if dos[a] else injs):
                    episodes.append({"episode": episode_id(s, u, i, a), "suite": s, "user_task": u, "injection_task": i, "attack": a})
    return version, suites, episodes


def episode_id(suite, user_task, injection_task, attack):
    return "agentdojo:%s:%s:%s:%s" % (suite, user_task, injection_task or NONE, attack or NONE)


# ---------------------------------------------------------------------------------------------
# files

class JsonlAppender:
    """Append one JSON line per write (flush + fsync); a torn last line is cut off first."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        if os.path.exists(path):
            with open(path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        self.file = open(path, "a", encoding="utf-8")

    def append(self, value):
        line = json.dumps(value, ensure_ascii=False, default=str) + "\n"
        with self.lock:
            self.file.write(line)
            self.file.flush()
            os.fsync(self.file.fileno())


def read_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, dict):
                out.append(v)
    return out


class Attempts:
    """The runners' attempt log: ``{"key": <episode>, "attempt": n}``, numbered per key."""

    def __init__(self, path):
        self.last = {}
        for v in read_jsonl(path):
            if isinstance(v.get("key"), str) and isinstance(v.get("attempt"), int):
                self.last[v["key"]] = v["attempt"]
        self.log = JsonlAppender(path)
        self.lock = threading.Lock()

    def start(self, key):
        with self.lock:
            n = self.last.get(key, 0) + 1
            self.last[key] = n
        self.log.append({"key": key, "attempt": n})
        return n


def lock_results(path):
    """An exclusive lock on the results file for the life of the process (exit 5 when another launcher holds it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return None
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    f = open(path, "a", encoding="utf-8")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("another launcher is running on %s; wait for it to end or stop it (a second one would run the same episodes)" % path)
        sys.exit(EXIT_BUSY)
    except OSError as e:  # a file system without locks (some network mounts): run unlocked
        say("cannot lock %s (%s); running without the lock" % (path, e))
    return f


def exit_with_parent(pid):
    """Exit (6) as soon as this process's parent is no longer ``pid``: the runner that started it is gone."""
    def watch():
        while True:
            if os.getppid() != pid:
                try:  # stderr is often a pipe to the runner that is gone
                    say("the runner (pid %d) is gone; stopping" % pid)
                except Exception:
                    pass
                os._exit(EXIT_ORPHANED)
            time.sleep(0.5)
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


# ---------------------------------------------------------------------------------------------
# the model client: per-episode headers, usage and oracle script from the worker thread's episode

CURRENT = threading.local()


def call_json(c):
    return {"function": c.function, "args": json.loads(json.dumps(dict(c.args), default=str))}


class _Completions:
    def __init__(self, client):
        self.client = client

    def create(self, **kwargs):
        ep = CURRENT.episode
        extra = dict(kwargs.pop("extra_body", None) or {})
        if ep["oracle"] is not None:
            extra["vetobench_oracle"] = ep["oracle"]
        headers = dict(kwargs.pop("extra_headers", None) or {})
        headers.update(ep["headers"])
        completion = self.client.chat.completions.create(extra_headers=headers, extra_body=extra or None, **kwargs)
        u = getattr(completion, "usage", None)
        if u is not None:
            ep["usage"]["prompt_tokens"] += u.prompt_tokens or 0
            ep["usage"]["completion_tokens"] += u.completion_tokens or 0
            ep["usage_seen"] = True
        return completion


class _Chat:
    def __init__(self, client):
        self.completions = _Completions(client)


class EpisodeClient:
    """What AgentDojo's OpenAI elements call (``client.chat.completions.create``), on a real ``openai.OpenAI``."""

    def __init__(self, client):
        self.chat = _Chat(client)


class Recorder(BasePipelineElement):
    """AgentDojo's pipeline, remembering the messages of the worker's episode (the calls it executed)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name

    def query(self, query, runtime, env, messages=[], extra_args={}):
        try:
            out = self.inner.query(query, runtime, env, messages, extra_args)
        except AbortAgentError as e:
            CURRENT.episode["messages"] = list(e.messages)
            raise
        CURRENT.episode["messages"] = list(out[3])
        return out


def executed_calls(messages):
    return [call_json(m["tool_call"]) for m in messages if m.get("role") == "tool" and m.get("tool_call") is not None]


# ---------------------------------------------------------------------------------------------
# the oracle's script

def pre_environment(suite, user_task, injections):
    env = suite.load_and_inject_default_environment(injections)
    return user_task.init_environment(env).model_copy(deep=True)


def oracle_script(suite, user_calls, injection_calls, injections, pre_env, final):
    def wire(c):
        return {"name": c["function"], "arguments": c["args"]}

    # one call per turn; more than MAX_TURNS calls are batched evenly, since AgentDojo's tool loop
    # stops after 15 rounds (ToolsExecutionLoop's max_iters)
    per_turn = max(1, -(-len(user_calls) // MAX_TURNS))
    turns = [{"calls": [wire(c) for c in user_calls[i:i + per_turn]]} for i in range(0, len(user_calls), per_turn)]
    answer = {"calls": [], "content": final}
    if injection_calls:
        carrier = 0
        if injections:
            runtime = FunctionsRuntime(suite.tools)
            env = pre_env.model_copy(deep=True)
            for k, c in enumerate(user_calls):
                result, err = runtime.run_function(env, c["function"], c["args"], raise_on_error=False)
                text = err if err is not None else tool_result_to_str(result)
                if any(v in (text or "") for v in injections.values()):
                    carrier = k
                    break
        hijack = [wire(c) for c in injection_calls]
        after = carrier // per_turn + 1
        if user_calls and after < len(turns):
            turns[after] = {"calls": hijack + turns[after]["calls"]}
        elif user_calls:
            turns.append({"calls": hijack, "content": final})
    turns.append(answer)
    tools = []
    for c in user_calls:
        if c["function"] not in tools:
            tools.append(c["function"])
    return {"turns": turns, "tool_filter": ", ".join(tools)}


# ---------------------------------------------------------------------------------------------
# run

def error_text(e):
    if isinstance(e, openai.APIStatusError):
        return "%s: HTTP %s: %s" % (type(e).__name__, e.status_code, str(e)[:500])
    if isinstance(e, openai.APIError):
        return "%s: %s" % (type(e).__name__, str(e)[:500])
    tb = traceback.extract_tb(e.__traceback__)
    where = "" if not tb else " (at %s:%s)" % (os.path.basename(tb[-1].filename), tb[-1].lineno)
    return "%s: %s%s" % (type(e).__name__, str(e)[:500], where)


class Runner:
    def __init__(self, opts, version, suites, episodes):
        self.opts = opts
        self.version = version
        self.suites = suites
        self.episodes = episodes
        client = openai.OpenAI(base_url=opts.base_url, api_key=os.environ.get("OPENAI_API_KEY", "vetobench"), timeout=opts.timeout, max_retries=2)
        llm = OpenAILLM(EpisodeClient(client), opts.route)
        llm.name = opts.route
        self.pipeline = Recorder(AgentPipeline.from_config(
            PipelineConfig(llm=llm, model_id=None, defense=opts.defense, system_message_name=None, system_message=None)
        ))
        self.target = NamedTarget(opts.attack_model_name)
        self.attacks = {}
        self.attacks_lock = threading.Lock()
        self.results = JsonlAppender(opts.results)
        self.attempts = Attempts(opts.attempts)
        self.stop = threading.Event()
        self.streak = (None, 0)
        self.streak_lock = threading.Lock()

    def attack(self, suite_name, name):
        with self.attacks_lock:
            key = (suite_name, name)
            if key not in self.attacks:
                self.attacks[key] = load_attack(name, self.suites[suite_name], self.target)
            return self.attacks[key]

    def row(self, ep, attempt, started, **fields):
        o = self.opts
        row = {
            "episode": ep["episode"], "suite": ep["suite"], "user_task": ep["user_task"],
            "injection_task": ep["injection_task"], "attack": ep["attack"],
            "variant": o.variant, "arm": o.arm, "judge": o.judge, "defense": o.defense,
            "benchmark_version": self.version, "model": o.model, "route": o.route, "oracle": o.oracle,
            "utility": None, "security": None, "error": None, "attempt": attempt,
            "duration_s": round(time.monotonic() - started, 3), "usage": None,
            "injection_ground_truth": [], "user_ground_truth": [], "calls": [],
        }
        row.update(fields)
        return row

    def run_one(self, ep):
        if self.stop.is_set():
            return
        started = time.monotonic()
        attempt = self.attempts.start(ep["episode"])
        state = {"messages": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "usage_seen": False, "oracle": None,
                 "headers": {"x-vetobench-run": self.opts.run_id, "x-vetobench-episode": ep["episode"], "x-vetobench-attempt": str(attempt)}}
        CURRENT.episode = state
        fields = {}
        try:
            suite = self.suites[ep["suite"]]
            user_task = suite.get_user_task_by_id(ep["user_task"])
            injection_task = suite.get_injection_task_by_id(ep["injection_task"]) if ep["injection_task"] else None
            injections = self.attack(ep["suite"], ep["attack"]).attack(user_task, injection_task) if injection_task is not None else {}
            pre = pre_environment(suite, user_task, injections)
            user_gt = [call_json(c) for c in user_task.ground_truth(pre.model_copy(deep=True))]
            # a DoS attack's injection does not ask for its injection task's goal (AgentDojo runs the
            # suite's first only as a placeholder): no harmful ground truth, nothing for the oracle to follow
            dos = injection_task is not None and self.attack(ep["suite"], ep["attack"]).is_dos_attack
            inj_gt = [call_json(c) for c in injection_task.ground_truth(pre.model_copy(deep=True))] if injection_task is not None and not dos else []
            fields.update(user_ground_truth=user_gt, injection_ground_truth=inj_gt)
            if self.opts.oracle:
                final = user_task.GROUND_TRUTH_OUTPUT or "Task finished."
                state["oracle"] = oracle_script(suite, user_gt, inj_gt, injections, pre, final)
            utility, security = suite.run_task_with_pipeline(self.pipeline, user_task, injection_task, injections)
            if injection_task is None:
                security = None
            elif dos:
                security = not utility  # AgentDojo's convention for DoS attacks
            fields.update(utility=bool(utility), security=None if security is None else bool(security))
        except Exception as e:  # every failure is a row with the error, never a score
            fields.update(error=error_text(e))
        fields.update(calls=executed_calls(state["messages"]), usage=dict(state["usage"]) if state["usage_seen"] else None)
        row = self.row(ep, attempt, started, **fields)
        self.results.append(row)
        self.note(row["error"])

    def note(self, error):
        limit = self.opts.stop_after
        with self.streak_lock:
            last, n = self.streak
            self.streak = (error, n + 1 if error is not None and error == last else (1 if error is not None else 0))
            if limit > 0 and self.streak[1] >= limit and not self.stop.is_set():
                say("stopping: %d episodes in a row failed with: %s" % (self.streak[1], error))
                self.stop.set()

    def run(self, todo):
        with ThreadPoolExecutor(max_workers=max(1, self.opts.workers)) as pool:
            for f in [pool.submit(self.run_one, ep) for ep in todo]:
                f.result()


def add_plan_options(p):
    p.add_argument("--suites", required=True)
    p.add_argument("--benchmark-version", default=None)
    p.add_argument("--attacks", default="")
    p.add_argument("--user-tasks", default=None)
    p.add_argument("--injection-tasks", default=None)
    p.add_argument("--defense", default=None)
    p.add_argument("--attack-model-name", default="local")


def main(argv):
    parser = argparse.ArgumentParser(prog="launch.py")
    sub = parser.add_subparsers(dest="mode", required=True)
    add_plan_options(sub.add_parser("plan"))
    r = sub.add_parser("run")
    add_plan_options(r)
    for name in ("--base-url", "--route", "--model", "--variant", "--arm", "--run-id", "--results", "--attempts"):
        r.add_argument(name, required=True)
    r.add_argument("--judge", default=None)
    r.add_argument("--episodes", default=None)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--oracle", action="store_true")
    r.add_argument("--stop-after", type=int, default=20)
    r.add_argument("--timeout", type=float, default=600.0)
    r.add_argument("--exit-with-parent", type=int, default=None, metavar="PID")
    opts = parser.parse_args(argv)
    if opts.mode == "run" and opts.exit_with_parent is not None:
        exit_with_parent(opts.exit_with_parent)

    version, suites, episodes = make_plan(opts)
    if opts.mode == "plan":
        json.dump({"benchmark_version": version, "episodes": episodes}, sys.stdout)
        sys.stdout.write("\n")
        return 0

    lock = lock_results(opts.results)  # noqa: F841  (held until the process ends)
    if opts.episodes is not None:
        try:
            with open(opts.episodes, encoding="utf-8") as f:
                wanted = json.load(f)
        except (OSError, ValueError) as e:
            usage_error("--episodes %s: %s" % (opts.episodes, e))
        if not isinstance(wanted, list) or not all(isinstance(x, str) for x in wanted):
            usage_error("--episodes %s: expected a JSON list of episode ids" % opts.episodes)
        planned = {ep["episode"] for ep in episodes}
        stray = [x for x in wanted if x not in planned]
        if stray:
            usage_error("--episodes %s: %d ids are not in the plan (first: %s)" % (opts.episodes, len(stray), stray[0]))
        keep = set(wanted)
        episodes = [ep for ep in episodes if ep["episode"] in keep]
    last = {}
    for row in read_jsonl(opts.results):
        if isinstance(row.get("episode"), str):
            last[row["episode"]] = row
    def done(row):  # as the runner's isDone: no error, a utility, this benchmark version and agent
        return (row is not None and row.get("error") is None and isinstance(row.get("utility"), bool)
                and row.get("benchmark_version") == version and (row.get("oracle") is True) == bool(opts.oracle))
    todo = [ep for ep in episodes if not done(last.get(ep["episode"]))]
    say("%d episodes, %d done before, %d to run (%s, %s)" % (len(episodes), len(episodes) - len(todo), len(todo), opts.route, opts.defense or "no defense"))
    started = time.monotonic()
    runner = Runner(opts, version, suites, episodes)
    runner.run(todo)
    t = os.times()
    print(json.dumps({"ran": len(todo), "wall_s": round(time.monotonic() - started, 3), "cpu_s": round(t.user + t.system, 3)}), flush=True)
    if runner.stop.is_set():
        return EXIT_STOPPED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
