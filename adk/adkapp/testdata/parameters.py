"""Prints the parameters schema of each AdkApp class method as the
platform's Python SDK derives it (a pydantic model of the method's
keyword arguments, titles dropped, Optional[X] as X plus nullable: true,
required = the arguments without a default), for adkapp's
TestParameters, which compares it with parameters.json. The signatures
are AdkApp's (vertexai.agent_engines.templates.adk.AdkApp); **kwargs is
not part of the schema.

    python3 adk/adkapp/testdata/parameters.py > adk/adkapp/parameters.json   # needs pydantic 2
"""

import inspect
import json
import typing
from typing import Any, Dict, List, Optional, Union

import pydantic


def async_stream_query(*, message: Union[str, Dict[str, Any]], user_id: str,
                       session_id: Optional[str] = None,
                       session_events: Optional[List[Dict[str, Any]]] = None,
                       run_config: Optional[Dict[str, Any]] = None, **kwargs): ...
def stream_query(*, message: Union[str, Dict[str, Any]], user_id: str,
                 session_id: Optional[str] = None,
                 run_config: Optional[Dict[str, Any]] = None, **kwargs): ...
def streaming_agent_run_with_events(request_json: str): ...
def get_session(*, user_id: str, session_id: str, **kwargs): ...
def list_sessions(*, user_id: str, **kwargs): ...
def create_session(*, user_id: str, session_id: Optional[str] = None,
                   state: Optional[Dict[str, Any]] = None, **kwargs): ...
def delete_session(*, user_id: str, session_id: str, **kwargs): ...
def async_add_session_to_memory(*, session: Dict[str, Any]): ...
def async_search_memory(*, user_id: str, query: str): ...


SIGNATURES = {
    "create_session": create_session,
    "async_create_session": create_session,
    "get_session": get_session,
    "async_get_session": get_session,
    "list_sessions": list_sessions,
    "async_list_sessions": list_sessions,
    "delete_session": delete_session,
    "async_delete_session": delete_session,
    "async_add_session_to_memory": async_add_session_to_memory,
    "async_search_memory": async_search_memory,
    "stream_query": stream_query,
    "async_stream_query": async_stream_query,
    "streaming_agent_run_with_events": streaming_agent_run_with_events,
}

KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY,
         inspect.Parameter.POSITIONAL_ONLY)


def parameters(f):
    params = {n: p for n, p in inspect.signature(f).parameters.items() if p.kind in KINDS}
    fields = {n: (p.annotation, pydantic.Field()) for n, p in params.items()}
    schema = pydantic.create_model(f.__name__, **fields).model_json_schema()
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        ann = params[name].annotation
        if typing.get_origin(ann) is Union and type(None) in typing.get_args(ann):
            for alt in prop.pop("anyOf", []):
                if alt.get("type") not in (None, "null"):
                    prop["type"] = alt["type"]  # only the type, as the SDK does
                    break
            prop["nullable"] = True
    schema["required"] = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    return schema


print(json.dumps({name: parameters(f) for name, f in SIGNATURES.items()}, indent=2, sort_keys=True))
