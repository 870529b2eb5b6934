"""``localagent server worker``: run an RPC worker on this machine, supervised, until stopped.

A llama-server on another machine (a profile's ``rpc_workers``) then keeps some of the model's
layers here. The worker is the ``rpc-server`` built with llama-server (it is built first when
there is none), restarted when it dies, and bound to loopback unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse

from server.rpc_endpoints import DEFAULT_WORKER_PORT


def register(sub: argparse._SubParsersAction) -> None:
    worker = sub.add_parser(
        "worker",
        help="run an RPC worker here, for a llama-server elsewhere to keep layers on (builds it if needed)",
    )
    worker.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    worker.add_argument("--port", type=int, default=DEFAULT_WORKER_PORT, help=f"default {DEFAULT_WORKER_PORT}")
    worker.add_argument("--threads", "-t", type=int, help="CPU threads for the worker's CPU device")
    worker.add_argument("--cache", action="store_true", help="keep received tensors on disk: restarts load faster")
    worker.set_defaults(handler=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    from localagent.worker_run import run_worker

    return run_worker(args)
