#!/usr/bin/env python3
"""Run ASB's ``main_attacker.py`` unmodified, with its agent LLM served through veto-proxy.

    <ASB venv python> launch.py --asb-dir DIR --run-id ID [--session TAG] [--attempt N]
        [--usage-file FILE] [--malformed-arguments asb|empty] -- <main_attacker.py args>

Runs inside ASB's own virtual environment (its heavy dependencies live there), so this file imports
only the standard library, ``openai`` and ASB's own modules. Before ``main_attacker.py`` starts it
makes five changes to ASB's modules in memory (ASB's files are never edited):

1. registers the ``--llm_name`` value (the vetobench route, e.g. ``qwen3.8-27b@enforce:small``) in
   ASB's ``MODEL_REGISTRY`` with ``VetoLLM``: ASB's GPT backend without its "name must contain gpt"
   assertion and its fixed 2 s sleep. It calls the OpenAI client at ``OPENAI_BASE_URL`` (the proxy)
   with ``model=<route>``, the agent's messages and tools, ``max_tokens=--max_new_tokens`` (1024 when
   not given, GPTLLM's default), ``seed=0`` and ``temperature=0.0``, as ASB's GPT backend does.
   Tool-call arguments are parsed as ASB's backend parses them (``json.loads``); when that raises
   (arguments that are not JSON, or empty), ASB's backend answers with no tool call and the text
   ``An unexpected error occurred: <error>``, and so does VetoLLM (``--malformed-arguments asb``,
   the default). ``--malformed-arguments empty`` keeps such a call with ``{}`` arguments instead
   (vetobench's earlier behaviour; a recorded deviation: it can change which calls ASB runs). A
   request that fails answers ``LLM API error: <error>`` (an infrastructure error, never scored).
   It sends ``x-vetobench-run: <run id>`` (``x-vetobench-session: <TAG>``, ``x-vetobench-attempt:
   <N>`` when given) on every agent request; with ``--usage-file`` it appends one JSON line per
   agent answer: ``{"episode", "prompt_tokens", "completion_tokens", "malformed_arguments"}``;
2. and 3. wraps ``AgentFactory.activate_agent`` and ``BaseAgent.create_agent_request`` so each
   request carries ``x-vetobench-episode: asb:<agent>:<attacker tool>:<task index>``, and the
   proxy's audit records join the rows of the result CSV (``<agent>`` is the agent's name in
   ``--tasks_path``, ``<task index>`` the task's position in that agent's list, counted from 0;
   characters outside printable ASCII, ``%`` and ``:`` are percent-encoded as UTF-8);
4. makes ``Interactor.check_reqs_installed`` answer True: ASB would run ``conda list`` for each agent
   (the example agents have nothing to install, and conda is usually absent);
5. keeps ``main_attacker``'s closing cache clean-up (``delete_directories`` of ``__pycache__`` and
   the like under the ASB directory) out of virtual environments: ASB's own venv lives in the
   checkout (``third_party/ASB/.venv``), and emptying its caches after every shard costs a minute
   and makes the next start recompile everything (while other shards are running).

Then it runs ``main_attacker.py`` as ``__main__`` from the ASB directory and ends the process with a
real status: 0 when it returns, its code on ``SystemExit`` (argparse errors give 2), 1 with the
traceback on any other exception. The process is ended with ``os._exit``, because ASB's scheduler
thread is not a daemon and would keep a failed run alive forever.

Calls ASB makes with its own ``OpenAI()`` clients (the refusal judge and the paraphrase defences,
model ``gpt-4o-mini``) go to the same base URL without vetobench headers: the proxy passes them
through and its alias table sends them to a local judge model.

Launcher exit codes of its own: 2 usage or environment (no ``OPENAI_BASE_URL``, no ``--llm_name``,
no ``main_attacker.py`` in ``--asb-dir``), 3 ASB's modules could not be imported.
"""
import argparse
import json
import os
import runpy
import shutil
import sys
import threading
import time
import traceback

DEFAULT_MAX_TOKENS = 1024  # GPTLLM's own default; API backends ignore main_attacker's --max_new_tokens
MALFORMED_MODES = ("asb", "empty")


def say(line):
    print("[vetobench] %s" % line, flush=True)


def finish(code):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def header_part(text):
    """One component of an episode id: printable ASCII kept, except ``%`` and ``:``; the rest %XX."""
    out = []
    for ch in str(text):
        o = ord(ch)
        if 0x21 <= o <= 0x7E and ch not in "%:":
            out.append(ch)
        else:
            out.extend("%%%02X" % b for b in ch.encode("utf-8"))
    return "".join(out)


def option_value(argv, name, default=None):
    """The value of ``--name V`` or ``--name=V`` in argv (the last one wins, as argparse does)."""
    value = default
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a[len(name) + 1:]
    return value


class TaskIndex:
    """Task positions per agent, from main_attacker's ``--tasks_path`` (read once, thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.files = {}

    def load(self, path):
        with self.lock:
            if path in self.files:
                return self.files[path]
            agents = {}
            try:
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        if not line.strip():
                            continue
                        row = json.loads(line)
                        name = str(row.get("agent_name", ""))
                        tasks = [str(t) for t in row.get("tasks", [])]
                        for key in (row.get("agent_path"), name):
                            if key:
                                agents[str(key)] = (name or os.path.basename(str(key)), tasks)
            except (OSError, ValueError) as e:
                say("cannot read the tasks file %s for episode ids: %s" % (path, e))
            self.files[path] = agents
            return agents

    def episode(self, tasks_path, agent_path, task, attacker_tool):
        agents = self.load(tasks_path)
        name, tasks = agents.get(str(agent_path), (os.path.basename(str(agent_path)), []))
        index = tasks.index(task) if task in tasks else "?"
        return "asb:%s:%s:%s" % (header_part(name), header_part(attacker_tool), index)


def is_venv(path):
    return os.path.isfile(os.path.join(path, "pyvenv.cfg")) or os.path.realpath(path) == os.path.realpath(sys.prefix)


def delete_directories_outside_venvs(root_dir, target_dirs):
    """ASB's ``delete_directories`` (remove every directory named in target_dirs under root_dir),
    without descending into virtual environments."""
    for dirpath, dirnames, _files in os.walk(root_dir, topdown=True):
        keep = []
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if name in target_dirs:
                shutil.rmtree(full, ignore_errors=True)
            elif not is_venv(full):
                keep.append(name)
        dirnames[:] = keep


def parse_tool_calls(tool_calls, mode):
    """ASB's ``parse_tool_calls``: ``[{"name", "parameters"}]`` or None. Mode ``asb``: arguments go
    through ``json.loads`` and a failure raises, as in ASB's GPT backend; mode ``empty``: arguments
    that are blank or not JSON become ``{}``."""
    if not tool_calls:
        return None
    parsed = []
    for tc in tool_calls:
        raw = tc.function.arguments
        if mode == "asb":
            args = json.loads(raw)
        else:
            try:
                args = json.loads(raw) if raw and raw.strip() else {}
            except ValueError:
                args = {}
        parsed.append({"name": tc.function.name, "parameters": args})
    return parsed


def malformed_arguments(tool_calls):
    """Some call's arguments are not what ``json.loads`` (ASB's backend) accepts."""
    for tc in tool_calls or []:
        try:
            json.loads(tc.function.arguments)
        except (TypeError, ValueError):
            return True
    return False


class UsageLog:
    """One JSON line per agent answer, appended and flushed under a lock (agents run in threads)."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.file = open(path, "a", encoding="utf-8") if path else None

    def add(self, episode, usage, malformed):
        if self.file is None:
            return
        line = {
            "episode": episode,
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0,
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0,
            "malformed_arguments": malformed,
        }
        with self.lock:
            self.file.write(json.dumps(line) + "\n")
            self.file.flush()


def attacker_tool_name(tool):
    try:
        return str(tool["Attacker Tool"])
    except (KeyError, TypeError, IndexError):
        return "?"


def main():
    ap = argparse.ArgumentParser(prog="launch.py", description="run ASB's main_attacker.py through veto-proxy")
    ap.add_argument("--asb-dir", required=True, help="the ASB checkout")
    ap.add_argument("--run-id", required=True, help="sent as x-vetobench-run")
    ap.add_argument("--session", default=None, help="sent as x-vetobench-session (vetobench passes the attack tag)")
    ap.add_argument("--attempt", type=int, default=None, help="sent as x-vetobench-attempt (which start of the shard)")
    ap.add_argument("--usage-file", default=None, help="append one JSON line per agent answer (tokens, malformed arguments)")
    ap.add_argument("--malformed-arguments", choices=MALFORMED_MODES, default="asb",
                    help="tool-call arguments that are not JSON: asb (no tool call, ASB's error text) or empty ({})")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then main_attacker.py's arguments")
    ns = ap.parse_args()
    rest = ns.rest[1:] if ns.rest[:1] == ["--"] else ns.rest

    base_url = os.environ.get("OPENAI_BASE_URL", "").strip()
    if not base_url:
        say("OPENAI_BASE_URL must point at veto-proxy (e.g. http://127.0.0.1:8080/v1)")
        finish(2)
    os.environ.setdefault("OPENAI_API_KEY", "vetobench")
    llm_name = option_value(rest, "--llm_name")
    if not llm_name:
        say("pass --llm_name <route> to main_attacker.py (after --)")
        finish(2)
    try:
        max_tokens = int(option_value(rest, "--max_new_tokens", DEFAULT_MAX_TOKENS))
    except ValueError:
        max_tokens = DEFAULT_MAX_TOKENS  # main_attacker's own argparse reports it

    asb_dir = os.path.abspath(ns.asb_dir)
    script = os.path.join(asb_dir, "main_attacker.py")
    if not os.path.isfile(script):
        say("no main_attacker.py in %s (set paths.asb_dir to an ASB checkout; see scripts/setup_asb_env.sh)" % asb_dir)
        finish(2)
    os.chdir(asb_dir)
    sys.path.insert(0, asb_dir)

    try:
        import openai
        from openai import OpenAI
        from aios.llm_core.llm_classes import model_registry
        from aios.llm_core.llm_classes.base_llm import BaseLLM
        from aios.utils import utils as aios_utils
        from pyopenagi.agents.agent_factory import AgentFactory
        from pyopenagi.agents.base_agent import BaseAgent
        from pyopenagi.agents.interact import Interactor
        from pyopenagi.utils.chat_template import Response
    except Exception:
        traceback.print_exc()
        say("cannot import ASB's modules with %s (is this ASB's venv? see scripts/setup_asb_env.sh)" % sys.executable)
        finish(3)

    run_id = ns.run_id
    default_headers = {"x-vetobench-run": run_id}
    if ns.session:
        default_headers["x-vetobench-session"] = ns.session
    if ns.attempt is not None:
        default_headers["x-vetobench-attempt"] = str(ns.attempt)
    mode = ns.malformed_arguments
    usage_log = UsageLog(ns.usage_file)

    class VetoLLM(BaseLLM):
        """ASB's GPT backend for any model name: no name assertion, no fixed sleep, vetobench headers."""

        def __init__(self, llm_name, max_gpu_memory=None, eval_device=None, max_new_tokens=None, log_mode="console"):
            BaseLLM.__init__(self, llm_name, max_gpu_memory, eval_device, max_tokens, log_mode)

        def load_llm_and_tokenizer(self):
            self.model = OpenAI(default_headers=default_headers, max_retries=5, timeout=900)
            self.tokenizer = None

        @staticmethod
        def parse_tool_calls(tool_calls):
            return parse_tool_calls(tool_calls, mode)

        def process(self, agent_process, temperature=0.0):
            agent_process.set_status("executing")
            agent_process.set_start_time(time.time())
            episode = getattr(agent_process, "vetobench_episode", None) or "asb:%s" % header_part(
                os.path.basename(str(agent_process.agent_name))
            )
            try:
                response = self.model.chat.completions.create(
                    model=self.model_name,
                    messages=agent_process.query.messages,
                    tools=agent_process.query.tools,
                    max_tokens=self.max_new_tokens,
                    seed=0,
                    temperature=temperature,
                    extra_headers={"x-vetobench-episode": episode},
                )
                message = response.choices[0].message
            except Exception as e:  # the request failed: infrastructure, never the agent's answer
                agent_process.set_response(Response(response_message="LLM API error: %s" % e))
            else:
                malformed = malformed_arguments(message.tool_calls)
                try:
                    reply = Response(response_message=message.content, tool_calls=self.parse_tool_calls(message.tool_calls))
                except Exception as e:  # ASB's backend: the answer becomes its error text, without tool calls
                    reply = Response(response_message="An unexpected error occurred: %s" % e)
                    say("%s: tool-call arguments are not JSON (%s); the answer has no tool call, as in ASB" % (episode, e))
                usage_log.add(episode, getattr(response, "usage", None), malformed)
                agent_process.set_response(reply)
            agent_process.set_status("done")
            agent_process.set_end_time(time.time())

    # llms.py imported MODEL_REGISTRY by name: the same dict object, so this registration is seen there
    model_registry.MODEL_REGISTRY[llm_name] = VetoLLM

    # the example agents have empty requirement files; ASB would shell out to `conda list` for each
    Interactor.check_reqs_installed = lambda self, agent: True

    # main_attacker imports delete_directories by name when it starts, so it gets this one
    aios_utils.delete_directories = delete_directories_outside_venvs

    # per-episode ids: the factory knows agent, task and attacker tool; every request of that agent
    # is created by BaseAgent.create_agent_request, and the backend reads the id off the request
    tasks = TaskIndex()
    activate_agent = AgentFactory.activate_agent
    create_agent_request = BaseAgent.create_agent_request

    def activate_with_episode(self, agent_name, task_input, args, attacker_tool, vector_db, agg):
        agent = activate_agent(self, agent_name, task_input, args, attacker_tool, vector_db, agg)
        tasks_path = getattr(args, "tasks_path", None) or "data/agent_task.jsonl"
        agent.vetobench_episode = tasks.episode(tasks_path, agent_name, task_input, attacker_tool_name(attacker_tool))
        return agent

    def create_request_with_episode(self, query):
        agent_process = create_agent_request(self, query)
        if agent_process is not None:
            agent_process.vetobench_episode = getattr(self, "vetobench_episode", None)
        return agent_process

    AgentFactory.activate_agent = activate_with_episode
    BaseAgent.create_agent_request = create_request_with_episode

    say("pid %d: main_attacker.py in %s, route %s, run %s%s" % (
        os.getpid(), asb_dir, llm_name, run_id, ", session %s" % ns.session if ns.session else ""))
    say("attempt %s; tool-call arguments that are not JSON: %s" % (
        ns.attempt if ns.attempt is not None else "not numbered",
        "no tool call, as ASB's backend" if mode == "asb" else "kept with {} (deviation from ASB)"))
    sys.argv = [script] + list(rest)
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    say("main_attacker.py finished with exit status %d" % code)
    finish(code)


if __name__ == "__main__":
    main()
