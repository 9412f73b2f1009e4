"""Run a command with no network but loopback, counting connections to given ports.

    unshare -n sh -c 'ip link set lo up && exec python -m tests.e2e.offline PORT,PORT -- CMD...'

In a network namespace of its own (``unshare -n``) only 127.0.0.1 exists: anything the
command tries to reach elsewhere fails (network unreachable), and listeners on the ports a
recording's sites used count every connection that bypassed the proxy. Prints one JSON line:
the command's exit status and the count.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import threading


class ConnectionCounter:
    """Listens where the sites were: any connection there bypassed the proxy."""

    def __init__(self, ports: tuple[int, ...]):
        self.count = 0
        self._socks = []
        for port in ports:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen()
            sock.settimeout(0.1)
            self._socks.append(sock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            for sock in self._socks:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                self.count += 1
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self._socks:
            sock.close()


def offline_argv(ports: tuple[int, ...], command: list[str]) -> list[str]:
    """The argv that runs ``command`` offline (see the module's docstring)."""
    inner = "ip link set lo up && exec " + shlex.join(
        [sys.executable, "-m", "tests.e2e.offline", ",".join(map(str, ports)), "--", *command]
    )
    return ["unshare", "-n", "sh", "-c", inner]


def main(argv: list[str]) -> int:
    ports = tuple(int(p) for p in argv[0].split(",") if p)
    command = argv[argv.index("--") + 1 :]
    counter = ConnectionCounter(ports)
    try:
        done = subprocess.run(command, stdout=sys.stderr)
    finally:
        counter.close()
    print(json.dumps({"returncode": done.returncode, "bypass": counter.count}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
