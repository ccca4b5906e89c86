"""The stdio transport's event-loop path: non-blocking pipes read and written without worker threads."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import anyio

from dockyard_shared.stdio import CheckedStdin, PipeWriter, _non_blocking, _pollable, _same_file


def _slow_drain(fd: int, into: bytearray) -> threading.Thread:
    """Read ``fd`` to EOF in small, delayed gulps, so the writer meets a full pipe again and again."""

    def drain() -> None:
        while chunk := os.read(fd, 4096):
            into.extend(chunk)
            time.sleep(0.0005)

    thread = threading.Thread(target=drain)
    thread.start()
    return thread


async def test_a_reply_far_larger_than_the_pipe_arrives_whole_without_blocking_the_loop():
    read_end, write_end = os.pipe()
    received = bytearray()
    drain = _slow_drain(read_end, received)
    message = "".join(f'{{"row": {i}, "text": "é{"x" * 50}"}}' for i in range(40_000))  # ~2.4 MB
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.001)
            ticks += 1

    with _non_blocking(write_end):
        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            writer = PipeWriter(write_end)
            await writer.write(message + "\n")
            await writer.flush()
            group.cancel_scope.cancel()
    os.close(write_end)
    drain.join()
    os.close(read_end)
    assert received.decode("utf-8") == message + "\n"
    assert ticks > 5  # the loop kept running while the writer waited on the full pipe


async def test_lines_arriving_in_pieces_are_read_whole_on_the_loop():
    read_end, write_end = os.pipe()
    lines = [b'{"jsonrpc": "2.0", "id": %d, "method": "ping"}' % i for i in range(200)]
    wire = b"\n".join(lines) + b"\n"

    def trickle() -> None:
        for start in range(0, len(wire), 7):  # 7-byte pieces: lines split anywhere
            os.write(write_end, wire[start : start + 7])
        os.close(write_end)

    got = []
    with _non_blocking(read_end):
        stdin = CheckedStdin(read_end, on_event_loop=True)
        writer = threading.Thread(target=trickle)
        writer.start()
        async for line in stdin:
            got.append(line.encode())
        writer.join()
    os.close(read_end)
    assert got == lines


def test_only_pipes_and_sockets_are_served_on_the_loop(tmp_path):
    read_end, write_end = os.pipe()
    regular = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        assert _pollable(read_end) and _pollable(write_end)
        assert not _pollable(regular)
        assert _same_file(read_end, write_end)  # one pipe, both ends
        assert not _same_file(read_end, regular)
    finally:
        for fd in (read_end, write_end, regular):
            os.close(fd)


def test_the_blocking_flag_is_put_back(tmp_path):
    read_end, write_end = os.pipe()
    try:
        with _non_blocking(read_end):
            assert not os.get_blocking(read_end)
        assert os.get_blocking(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_server_whose_stderr_is_its_stdout_still_answers(toy_launch):
    # 2>&1: making the shared pipe non-blocking would break log writes, so the thread path is kept.
    request = (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",'
        ' "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n'
    )
    process = subprocess.run(
        [*toy_launch.command(), "--log-level", "DEBUG"],
        input=request,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        cwd=toy_launch.cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert '"id":1' in process.stdout.replace(" ", "") and '"protocolVersion"' in process.stdout
    assert "Logging error" not in process.stdout and "BlockingIOError" not in process.stdout
