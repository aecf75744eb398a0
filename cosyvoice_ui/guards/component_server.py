"""ASGI middleware: ``POST /gradio_api/component_server`` reaches Gradio only for a component
function that exists.

Gradio's route looks the component up by id without a check: an unknown ``component_id`` was a
bare 500 "Internal Server Error" and a 100-line ``KeyError`` traceback in the log (helper-85). It
also makes a session state for any ``session_hash`` it is sent, before it finds the function
missing. This page's components have no server functions (those are FileExplorer's, ImageEditor's,
Dialogue's), so every call here is refused with a 404 that names the id and function, the answer
Gradio gives ("Function not found.") for a real component without one.
"""

from __future__ import annotations

from .asgi_requests import answer_json, lax_int, logged_in, read_json, replay, route_path, with_length

ROUTE = "/gradio_api/component_server"


class KnownServerFunctions:
    """Pure ASGI middleware; other requests pass through untouched.

    Args:
        app: the ASGI app below.
        functions: component id -> names of its server functions (Gradio's ``Component.server_fns``);
            filled in once the page is built.
    """

    def __init__(self, app, functions: dict[int, set[str]]) -> None:
        self.app, self.functions = app, functions

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or route_path(scope).rstrip("/") != ROUTE:
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive, scope)
        component_id = lax_int(payload.get("component_id")) if payload else None
        fn_name = payload.get("fn_name") if payload else None
        if (component_id is not None and isinstance(fn_name, str)
                and fn_name not in self.functions.get(component_id, ())
                and await logged_in(self.app, scope, route_path(scope).rstrip("/"))):
            await answer_json(send, 404, f"Function not found: component {component_id} has no server function "
                                         f"{fn_name[:100]!r}.")
            return
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
