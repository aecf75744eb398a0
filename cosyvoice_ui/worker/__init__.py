"""Where a request crosses into the worker process: the supervisor (web side) and the worker
(its own process). Nothing else in the package knows about processes, pipes or signals."""
