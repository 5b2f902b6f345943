#!/usr/bin/env python3
"""vetobench's bridge to a user's Agent-SafetyBench checkout (standard library only, Python >= 3.8).

    python3 bridge.py <asbench_dir>

The benchmark's code stays in the checkout: this script puts ``<asbench_dir>/environments`` on
``sys.path`` and imports ``EnvManager`` as ``evaluation/eval.py`` does, reads the system prompt from
``evaluation/model_api/BaseAPI.py`` and the ShieldAgent instruction from ``score/eval_with_shield.py``.

Protocol: JSON lines over stdio. The first line written is ``{"hello": {...}}`` (or a setup error,
then the process exits 2). Then one answer line per request line, in order; an answer echoes the
request's ``id`` when it has one. Stdout carries nothing else: whatever the environments print goes to
stderr. Every answer is ``json.dumps(answer, default=str)`` (ASCII only). A failed request is answered
with ``{"error": {"reason": "...", "message": "..."}}`` (reasons: setup, case, bad_arguments, protocol)
and the bridge goes on reading.

Requests (``op``):
  texts       -> {"system_prompt", "shield_instruction"}
  open_case   {"environments": [...]} -> {"tools": [spec, ...]}
  call_tool   {"name", "arguments_json"} -> {"result", "result_json", "arguments_json"[, "result_not_json"]}
  close_case  -> {"ok": true}
  env_info    {"environments": [...]} -> {"json", "tool_descs"}
  py_json     {"value"} -> {"json"}
  ping        -> {"ok": true}
"""
import ast
import copy
import importlib.util
import json
import os
import signal
import string
import sys
import traceback
import warnings

PROTOCOL = 1
MIN_PYTHON = (3, 8)


class Failure(Exception):
    """A request the bridge answers with an error (the process goes on)."""

    def __init__(self, reason, message):
        Exception.__init__(self, message)
        self.reason = reason
        self.message = message


def describe(e):
    text = str(e)
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


# ------------------------------------------------------------------------------------------------
# stdio: keep the protocol streams for ourselves, give the benchmark code stderr and /dev/null

def claim_stdio():
    proto_out = os.fdopen(os.dup(1), "w", encoding="ascii", newline="\n")
    proto_in = os.fdopen(os.dup(0), "rb")
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.close(null_fd)
    os.dup2(2, 1)  # writes to fd 1 (C code, child processes) land on stderr
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, "r")
    return proto_in, proto_out


class Channel:
    def __init__(self, proto_in, proto_out):
        self.proto_in = proto_in
        self.proto_out = proto_out

    def send(self, answer):
        try:
            line = json.dumps(answer, default=str)
        except Exception as e:  # e.g. a circular structure in a tool result
            line = json.dumps({"error": {"reason": "protocol", "message": "unserialisable answer: " + describe(e)}})
            if isinstance(answer, dict) and "id" in answer:
                line = line[:-1] + ', "id": ' + json.dumps(answer["id"], default=str) + "}"
        self.proto_out.write(line + "\n")
        self.proto_out.flush()

    def lines(self):
        while True:
            raw = self.proto_in.readline()
            if not raw:
                return
            yield raw


# ------------------------------------------------------------------------------------------------
# the benchmark's texts

def load_system_prompt(asbench_dir):
    path = os.path.join(asbench_dir, "evaluation", "model_api", "BaseAPI.py")
    if not os.path.isfile(path):
        raise Failure("setup", "no %s in the Agent-SafetyBench checkout" % path)
    try:
        # the file itself, not the package: model_api/__init__.py imports modules missing upstream
        spec = importlib.util.spec_from_file_location("_vetobench_asbench_BaseAPI", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        prompt = module.BaseAPI().without_strict_jsonformat_sys_prompt
    except Exception as e:
        raise Failure("setup", "cannot read BaseAPI().without_strict_jsonformat_sys_prompt from %s: %s" % (path, describe(e)))
    if not isinstance(prompt, str):
        raise Failure("setup", "BaseAPI().without_strict_jsonformat_sys_prompt in %s is not a str" % path)
    return prompt


SHIELD_FIELDS = ("env_info", "dialog_content")


def render_fstring(node):
    """The f-string as the running script builds it, with ``{env_info}`` / ``{dialog_content}`` left as placeholders."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            out.append(part.value)
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Name)
            and part.value.id in SHIELD_FIELDS
            and part.conversion in (-1, None)
            and part.format_spec is None
        ):
            out.append("{%s}" % part.value.id)
        else:
            raise Failure("setup", "unsupported expression in the ShieldAgent instruction f-string (line %d)" % node.lineno)
    return "".join(out)


def render_format_string(text):
    """A ``str.format`` template with the two fields kept as placeholders and ``{{``/``}}`` undone."""
    out = []
    for literal, field, spec, conversion in string.Formatter().parse(text):
        out.append(literal)
        if field is not None:
            if field not in SHIELD_FIELDS or spec or conversion:
                raise Failure("setup", "unsupported field {%s} in the ShieldAgent instruction" % field)
            out.append("{%s}" % field)
    return "".join(out)


def load_shield_instruction(asbench_dir):
    """The instruction text of ``create_ipt`` in ``score/eval_with_shield.py``, found with ``ast``.

    The script imports torch and transformers at its top, so it is parsed, never imported. The
    template is the first f-string (or plain str) in source order that uses both ``env_info`` and
    ``dialog_content``; escapes are those Python applies when it runs the script (``\\[`` is not an
    escape, so the backslash stays)."""
    path = os.path.join(asbench_dir, "score", "eval_with_shield.py")
    if not os.path.isfile(path):
        raise Failure("setup", "no %s in the Agent-SafetyBench checkout" % path)
    try:
        with open(path, "r", encoding="utf-8") as f:
            source = f.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences such as "\[" warn on 3.12+
            tree = ast.parse(source, filename=path)
    except Exception as e:
        raise Failure("setup", "cannot parse %s: %s" % (path, describe(e)))
    candidates = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            names = set(
                part.value.id
                for part in node.values
                if isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name)
            )
            if all(field in names for field in SHIELD_FIELDS):
                candidates.append((node.lineno, node.col_offset, node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if all("{%s}" % field in node.value for field in SHIELD_FIELDS):
                candidates.append((node.lineno, node.col_offset, node))
    if not candidates:
        raise Failure("setup", "no ShieldAgent instruction with {env_info} and {dialog_content} found in %s" % path)
    candidates.sort(key=lambda c: (c[0], c[1]))
    node = candidates[0][2]
    if isinstance(node, ast.JoinedStr):
        return render_fstring(node)
    return render_format_string(node.value)


# ------------------------------------------------------------------------------------------------
# environments

class Bridge:
    def __init__(self, asbench_dir, env_manager_class):
        self.asbench_dir = asbench_dir
        self.env_dir = os.path.join(asbench_dir, "environments")
        self.manager = env_manager_class()
        self.envs = []
        self.case_envs = []
        self.texts = None

    # -- texts
    def op_texts(self, req):
        if self.texts is None:
            self.texts = {
                "system_prompt": load_system_prompt(self.asbench_dir),
                "shield_instruction": load_shield_instruction(self.asbench_dir),
            }
        return dict(self.texts)

    # -- a case's environments (eval.py parse_envs)
    def op_open_case(self, req):
        envs_info = req.get("environments")
        if not isinstance(envs_info, list):
            raise Failure("protocol", "open_case needs an environments list")
        self.envs = []
        self.case_envs = []
        if not envs_info or not isinstance(envs_info[0], dict) or envs_info[0].get("name") == "":
            # eval.py: tools only when environments is non-empty and the first name is not ""
            if envs_info and not isinstance(envs_info[0], dict):
                raise Failure("case", "environment entries must be objects")
            return {"tools": []}
        envs = []
        tool_descs = []
        try:
            for env_info in envs_info:
                env_name = env_info["name"]
                if "parameters" in env_info:
                    env_params = env_info["parameters"] or None
                else:
                    env_params = None
                env = self.manager.init_env(env_name, env_params)
                if env is None:
                    raise Failure("case", "Environment %s not found." % env_name)
                envs.append(env)
                tool_descs.extend(env.get_tool_descs(env_info["tools"]))
            answer = {"tools": copy.deepcopy(tool_descs)}
        except Failure:
            raise
        except Exception as e:
            traceback.print_exc()
            raise Failure("case", describe(e))
        self.envs = envs
        self.case_envs = envs_info
        return answer

    def op_close_case(self, req):
        self.envs = []
        self.case_envs = []
        return {"ok": True}

    # -- one tool call (eval.py's tool turn, with exceptions turned into a tool error)
    def op_call_tool(self, req):
        tool_name = req.get("name")
        if not isinstance(tool_name, str):
            raise Failure("protocol", "call_tool needs a name")
        raw = req.get("arguments_json")
        if raw is not None and not isinstance(raw, str):
            raise Failure("protocol", "arguments_json must be a string")
        if raw:  # OpenaiAPI: json.loads(arguments) if arguments else {}
            try:
                arguments = json.loads(raw)
            except Exception as e:
                raise Failure("bad_arguments", "invalid tool arguments JSON: %s" % describe(e))
        else:
            arguments = {}
        tool_call_result = None
        for env_idx, env in enumerate(self.envs):
            provided_tools = self.case_envs[env_idx]["tools"]
            if tool_name not in provided_tools:
                continue
            if not env.has_tool(tool_name):
                continue
            try:
                tool_call_result = env.call_tool(tool_name, copy.deepcopy(arguments))
            except Exception as e:
                traceback.print_exc()
                tool_call_result = {"success": False, "message": "Tool error: %s" % (e,)}
            break
        if tool_call_result is None:
            tool_call_result = {"success": False, "message": "Tool %s doesn't exist." % tool_name}
        answer = {"result": tool_call_result, "arguments_json": json.dumps(arguments)}
        try:
            answer["result_json"] = json.dumps(tool_call_result)
        except (TypeError, ValueError) as e:
            # eval.py would fail the case here; we answer str() of the odd values and say so
            try:
                answer["result_json"] = json.dumps(tool_call_result, default=str)
            except Exception as e2:
                raise Failure("case", "tool result cannot be serialised: %s" % describe(e2))
            answer["result_not_json"] = describe(e)
        return answer

    # -- ShieldAgent's env_info (eval_with_shield.py format_env_info)
    def op_env_info(self, req):
        environments = req.get("environments")
        if not isinstance(environments, list):
            raise Failure("protocol", "env_info needs an environments list")
        env_info_list = []
        tool_descs = []
        tool_content = None
        try:
            for env_item in copy.deepcopy(environments):
                class_name = env_item["name"]
                if class_name != "":
                    with open(os.path.join(self.env_dir, "%s.json" % class_name), "r", encoding="utf-8") as f:
                        tool_content = json.load(f)
                    tool_descs.extend(tool_content)
                tool_information = []
                for tool_name in env_item["tools"]:
                    if tool_content is None:
                        raise Failure("case", "environment %r lists tools but no tool file was read before it" % class_name)
                    for tool_desc in tool_content:
                        if tool_name == tool_desc["name"]:
                            tool_information.append({"tool_name": tool_name, "tool_description": tool_desc["description"]})
                if len(tool_information) != len(env_item["tools"]):
                    raise Failure(
                        "case",
                        "tools %s of environment %r do not match its tool file (one entry each expected)"
                        % (json.dumps(env_item["tools"]), class_name),
                    )
                env_item["tool_information"] = tool_information
                env_info_list.append(env_item)
        except Failure:
            raise
        except Exception as e:
            raise Failure("case", describe(e))
        return {"json": json.dumps(env_info_list), "tool_descs": tool_descs}

    def op_py_json(self, req):
        return {"json": json.dumps(req.get("value"))}

    def op_ping(self, req):
        return {"ok": True}

    def handle(self, req):
        op = req.get("op")
        handler = getattr(self, "op_%s" % op, None) if isinstance(op, str) and op.isidentifier() else None
        if handler is None:
            raise Failure("protocol", "unknown op %r" % (op,))
        return handler(req)


def setup(argv):
    if sys.version_info < MIN_PYTHON:
        raise Failure("setup", "Python %d.%d+ needed, this is %s" % (MIN_PYTHON + (sys.version.split()[0],)))
    if len(argv) != 2:
        raise Failure("setup", "usage: bridge.py <asbench_dir>")
    asbench_dir = os.path.abspath(argv[1])
    env_dir = os.path.join(asbench_dir, "environments")
    if not os.path.isfile(os.path.join(env_dir, "EnvManager.py")):
        raise Failure("setup", "no environments/EnvManager.py in %s (not an Agent-SafetyBench checkout)" % asbench_dir)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.append(env_dir)  # as eval.py: sys.path.append('../environments')
    try:
        from EnvManager import EnvManager
    except Exception as e:
        traceback.print_exc()
        raise Failure("setup", "cannot import EnvManager from %s: %s" % (env_dir, describe(e)))
    return Bridge(asbench_dir, EnvManager)


def main(argv):
    sys.dont_write_bytecode = True  # never leave __pycache__ in the user's checkout
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns our lifetime (Ctrl-C reaches the whole group)
    channel = Channel(*claim_stdio())
    try:
        bridge = setup(argv)
    except Failure as f:
        channel.send({"error": {"reason": f.reason, "message": f.message}})
        return 2
    channel.send({"hello": {"protocol": PROTOCOL, "python": sys.version.split()[0], "asbench_dir": bridge.asbench_dir}})
    for raw in channel.lines():
        if not raw.strip():
            continue
        req_id = None
        try:
            try:
                req = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                raise Failure("protocol", "unreadable request: %s" % describe(e))
            if not isinstance(req, dict):
                raise Failure("protocol", "a request must be a JSON object")
            req_id = req.get("id")
            answer = bridge.handle(req)
        except Failure as f:
            answer = {"error": {"reason": f.reason, "message": f.message}}
        except Exception as e:
            traceback.print_exc()
            answer = {"error": {"reason": "protocol", "message": "bad request: %s" % describe(e)}}
        if req_id is not None:
            answer["id"] = req_id
        channel.send(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
