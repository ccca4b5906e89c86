"""Build a large git history quickly with `git fast-import`.

    uv run python bench/git/make_history.py [PATH] [--commits 50000] [--files 3000]

PATH defaults to ``$TMPDIR/dockyard-bench/big-history``: generated data stays out of the checkout, where
the git server that bench/startup and bench/load run over this checkout would find it and serve it.

50,000+ commits over thousands of files, a few big commits (1,500 files each), and near the end one
commit that rewrites 100 files of 250 KB — a 25 MB diff. Deterministic: the same arguments give the same
history. Prints the path; the work tree is checked out at main.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
from pathlib import Path

DEFAULT_PATH = Path(tempfile.gettempdir()) / "dockyard-bench" / "big-history"


def build(path: Path, commits: int, files: int) -> Path:
    if (path / ".git").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    rng = random.Random(42)
    names = [f"src/module{d:02d}/file{i:04d}.txt" for d in range(max(1, files // 100)) for i in range(100)][
        :files
    ]
    process = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=path, stdin=subprocess.PIPE)
    stream = process.stdin
    timestamp = 1_600_000_000

    def write(text: str | bytes) -> None:
        stream.write(text.encode() if isinstance(text, str) else text)

    def data(payload: bytes) -> None:
        write(f"data {len(payload)}\n")
        write(payload)
        write("\n")

    def content(name: str, version: int, lines: int = 20) -> bytes:
        return "".join(
            f"{name} line {j} version {version if j % 5 == version % 5 else 0}\n" for j in range(lines)
        ).encode()

    huge_at = commits - 10
    for n in range(1, commits + 1):
        timestamp += rng.randint(60, 3600)
        author = rng.choice(
            ["Ada <ada@example.com>", "Grace <grace@example.com>", "Linus <linus@example.com>"]
        )
        write(
            f"commit refs/heads/main\nmark :{n}\nauthor {author} {timestamp} +0000\ncommitter {author} {timestamp} +0000\n"
        )
        if n == 1:
            changed, message = names, "initial import"
        elif n == huge_at or n == huge_at + 1:
            changed, message = (
                names[:100],
                "rewrite the big files" if n == huge_at + 1 else "grow the big files",
            )
        elif n % 10_000 == 0:
            changed, message = rng.sample(names, min(1500, len(names))), f"big refactor {n}"
        else:
            changed, message = rng.sample(names, rng.randint(1, 3)), f"change {n}: adjust {rng.choice(names)}"
        data(message.encode())
        if n > 1:
            write(f"from :{n - 1}\n")
        for name in changed:
            write(f"M 100644 inline {name}\n")
            if n in (huge_at, huge_at + 1):
                # 250 KB per file, every line different between the two commits: a 25 MB diff over 100 files.
                tag = "a" if n == huge_at else "b"
                data("".join(f"{name} {tag} row {j:06d} {'x' * 40}\n" for j in range(3_500)).encode())
            else:
                data(content(name, n))
        write("\n")
    stream.close()
    if process.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=path, check=True)
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", default=str(DEFAULT_PATH))
    parser.add_argument("--commits", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=3_000)
    args = parser.parse_args()
    print(build(Path(args.path), args.commits, args.files))
