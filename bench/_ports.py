"""Which loopback port a process listens on, from /proc: a benchmark measures the server it started.

A port found free and then handed to a server can be taken by another program in between (other
benchmarks and test suites run on this machine); a readiness probe would then be answered by that
program, and the run would measure it. Checking that the port is among the listening sockets of the
process we started closes that gap.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["listening_port"]


def listening_port(pid: int) -> int | None:
    """The loopback TCP port ``pid`` listens on (from its sockets' inodes in /proc/net/tcp), if any."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            return int(fields[1].split(":")[1], 16)
    return None
