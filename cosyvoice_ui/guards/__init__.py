"""The HTTP edge: what guards the web process before a request reaches Gradio's handlers.

ASGI middleware (installed in ``server.py``) and uvicorn's connection protocol: login checks for
routes Gradio leaves open, request and upload size, free space for uploads, expired file links,
host names on loopback, requests from pages at other addresses, frames in other pages, queue joins Gradio would
mishandle, one reader per session stream and per REST result, cancels that end only their own
event, component calls for functions that exist, no streamed input, open heartbeats per address,
slow and flooding connections, and errors that must not flood the log.
"""
