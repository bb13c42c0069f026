"""The state and the fake agent of the stand-in ADK api server (server.py).

Sessions and events as the Python InMemorySessionService keeps them, in the
camelCase pydantic emits, and the fake weather_agent's run (see README.md).
Standard library only.
"""

import copy
import threading
import time
import uuid

# A user message of EXPLODE_TEXT makes the run fail after its first event.
EXPLODE_TEXT = "explode"
EXPLODE_MESSAGE = 'Model said "no" twice'


# ---------------------------------------------------------------- key casing

def camel(key):
    if "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def camel_keys(d):
    return {camel(k): v for k, v in d.items()} if isinstance(d, dict) else d


def norm_part(part):
    """A genai Part, keys camelCased; user data (args, response) untouched."""
    if not isinstance(part, dict):
        return part
    out = {}
    for k, v in part.items():
        k = camel(k)
        if k in ("functionCall", "functionResponse", "inlineData", "fileData",
                 "executableCode", "codeExecutionResult") and isinstance(v, dict):
            v = camel_keys(v)
        out[k] = v
    return out


def norm_content(content):
    if not isinstance(content, dict):
        return content
    c = camel_keys(content)
    # genai's Content declares parts before role; pydantic keeps that order.
    out = {k: c[k] for k in ("parts", "role") if k in c}
    out.update({k: v for k, v in c.items() if k not in out})
    if isinstance(out.get("parts"), list):
        out["parts"] = [norm_part(p) for p in out["parts"]]
    return out


def empty_actions():
    return {"stateDelta": {}, "artifactDelta": {}, "requestedAuthConfigs": {}}


def norm_event(ev):
    """An event as given in a create-session body, as pydantic would echo it."""
    ev = camel_keys(ev) if isinstance(ev, dict) else {}
    actions = empty_actions()
    actions.update(camel_keys(ev.get("actions") or {}))
    out = {}
    if ev.get("content") is not None:
        out["content"] = norm_content(ev["content"])
    for k in ("groundingMetadata", "partial", "turnComplete", "errorCode",
              "errorMessage", "interrupted", "customMetadata", "usageMetadata"):
        if ev.get(k) is not None:
            out[k] = ev[k]
    out["invocationId"] = ev.get("invocationId") or ""
    out["author"] = ev.get("author") or "user"
    out["actions"] = actions
    for k in ("longRunningToolIds", "branch"):
        if ev.get(k) is not None:
            out[k] = ev[k]
    out["id"] = ev.get("id") or str(uuid.uuid4())
    out["timestamp"] = ev.get("timestamp") if ev.get("timestamp") is not None else time.time()
    return out


def new_event(inv, author, content, partial=False, state_delta=None, long_running=False):
    ev = {"content": content}
    if partial:
        ev["partial"] = True
    ev["invocationId"] = inv
    ev["author"] = author
    ev["actions"] = empty_actions()
    if state_delta:
        ev["actions"]["stateDelta"] = copy.deepcopy(state_delta)
    if long_running:
        ev["longRunningToolIds"] = []
    ev["id"] = str(uuid.uuid4())
    ev["timestamp"] = time.time()
    return ev


# ---------------------------------------------------------------- state

class Store:
    """InMemorySessionService, reduced: sessions[app][user][id]."""

    def __init__(self):
        self.lock = threading.RLock()
        self.sessions = {}
        self.app_state = {}
        self.user_state = {}
        self.memory = []  # (app, user, session id, text)

    def _merged(self, s):
        s = copy.deepcopy(s)
        for k, v in self.app_state.get(s["appName"], {}).items():
            s["state"]["app:" + k] = v
        for k, v in self.user_state.get(s["appName"], {}).get(s["userId"], {}).items():
            s["state"]["user:" + k] = v
        return s

    def get(self, app, user, sid):
        with self.lock:
            s = self.sessions.get(app, {}).get(user, {}).get(sid)
            return self._merged(s) if s else None

    def exists(self, app, user, sid):
        with self.lock:
            return sid in self.sessions.get(app, {}).get(user, {})

    def create(self, app, user, sid, state, events):
        """Returns the session, or None if the id is taken."""
        with self.lock:
            sid = sid.strip() if isinstance(sid, str) and sid.strip() else str(uuid.uuid4())
            users = self.sessions.setdefault(app, {}).setdefault(user, {})
            if sid in users:
                return None, sid
            users[sid] = {"id": sid, "appName": app, "userId": user,
                          "state": copy.deepcopy(state or {}), "events": [],
                          "lastUpdateTime": time.time()}
            for ev in events or []:
                self.append(app, user, sid, norm_event(ev))
            return self.get(app, user, sid), sid

    def list(self, app, user):
        with self.lock:
            out = []
            for s in self.sessions.get(app, {}).get(user, {}).values():
                s = self._merged(s)
                s["events"] = []
                out.append(s)
            return out

    def delete(self, app, user, sid):
        with self.lock:
            self.sessions.get(app, {}).get(user, {}).pop(sid, None)

    def append(self, app, user, sid, ev):
        """BaseSessionService.append_event: partial events are not stored."""
        with self.lock:
            s = self.sessions.get(app, {}).get(user, {}).get(sid)
            if s is None or ev.get("partial"):
                return
            for k, v in (ev.get("actions", {}).get("stateDelta") or {}).items():
                if k.startswith("temp:"):
                    continue
                if k.startswith("app:"):
                    self.app_state.setdefault(app, {})[k[4:]] = v
                elif k.startswith("user:"):
                    self.user_state.setdefault(app, {}).setdefault(user, {})[k[5:]] = v
                else:
                    s["state"][k] = v
            s["events"].append(copy.deepcopy(ev))
            s["lastUpdateTime"] = ev["timestamp"]

    def remember(self, app, user, sid):
        with self.lock:
            s = self.sessions.get(app, {}).get(user, {}).get(sid)
            if s is None:
                return False
            for ev in s["events"]:
                for p in (ev.get("content") or {}).get("parts") or []:
                    if isinstance(p, dict) and p.get("text"):
                        self.memory.append((app, user, sid, p["text"]))
            return True


STORE = Store()


# ---------------------------------------------------------------- fake agent

def message_text(msg):
    if not isinstance(msg, dict):
        return ""
    return "".join(p.get("text") or "" for p in msg.get("parts") or []
                   if isinstance(p, dict))


def run_agent(app, user, sid, new_message, state_delta, streaming):
    """Yields events as the Runner would, storing each non-partial one first.

    Raises RuntimeError(EXPLODE_MESSAGE) after the first event for "explode".
    """
    inv = "e-" + str(uuid.uuid4())
    text = message_text(new_message)
    if new_message is not None or state_delta:
        # Runner._append_new_message_to_session: the user's message (with the
        # request's stateDelta) is stored but not yielded.
        user_ev = new_event(inv, "user", norm_content(new_message) if new_message else None,
                            state_delta=state_delta)
        if user_ev["content"] is None:
            del user_ev["content"]
        STORE.append(app, user, sid, user_ev)
    author = "weather_agent"
    # Key order as pydantic emits it: Content(parts, role), FunctionCall(id, args, name).
    call = {"id": "call-1", "args": {"city": text}, "name": "get_weather"}
    ev1 = new_event(inv, author, {"parts": [{"functionCall": call}], "role": "model"},
                    state_delta=state_delta, long_running=True)
    yield ev1
    if text == EXPLODE_TEXT:
        raise RuntimeError(EXPLODE_MESSAGE)
    resp = {"id": "call-1", "name": "get_weather",
            "response": {"city": text, "forecast": "sunny", "temp_c": 21}}
    yield new_event(inv, author, {"parts": [{"functionResponse": resp}], "role": "user"})
    final = "The weather in %s is sunny." % text
    if streaming:
        n = len(final)
        for a, b in ((0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)):
            yield new_event(inv, author, {"parts": [{"text": final[a:b]}], "role": "model"},
                            partial=True)
    yield new_event(inv, author, {"parts": [{"text": final}], "role": "model"})


def stored_run(app, user, sid, req):
    for ev in run_agent(app, user, sid, req["newMessage"], req["stateDelta"], req["streaming"]):
        STORE.append(app, user, sid, ev)
        yield ev
