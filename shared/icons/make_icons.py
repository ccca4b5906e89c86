"""Draw each server's icon as SVG and as a 32x32 PNG into its package (``src/dockyard_NAME/icon.*``).

Run from the checkout after changing a shape: ``uv run python shared/icons/make_icons.py``. Standard
library only: the PNG is rasterised here from the same shapes as the SVG (4x4 supersampled), so the icons
need no image library and no network, and the files in the packages are what hosts get as data: URIs.
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZE = 32
WHITE = (255, 255, 255)

# Shapes on a 32x32 canvas: ("circle", cx, cy, r), ("ring", cx, cy, r, width), ("line", x1, y1, x2, y2, width),
# ("rect", x, y, w, h). Each server: its background colour and its white glyph.
SERVERS = {
    "sqlite": (
        (0x0F, 0x6C, 0xBD),
        [  # a database: three stacked bands (the lines are cut out)
            ("rect", 9, 9, 14, 15),
            ("line", 9, 14, 23, 14, 1.6),
            ("line", 9, 19, 23, 19, 1.6),
        ],
    ),
    "git": (
        (0xE8, 0x4D, 0x31),
        [  # a branch: two commits and a merge
            ("line", 11, 8, 11, 24, 2.5),
            ("line", 11, 18, 21, 12, 2.5),
            ("circle", 11, 8, 3),
            ("circle", 11, 24, 3),
            ("circle", 21, 11, 3),
        ],
    ),
    "tasks": (
        (0x2E, 0x9D, 0x5B),
        [  # a check mark
            ("line", 9, 16, 14, 21, 3),
            ("line", 14, 21, 23, 10, 3),
        ],
    ),
    "name-origin": (
        (0x7A, 0x4E, 0xC2),
        [  # a globe
            ("ring", 16, 16, 8, 2.2),
            ("line", 8, 16, 24, 16, 2),
            ("line", 16, 8, 16, 24, 2),
        ],
    ),
}


def _inside(shape: tuple, x: float, y: float) -> bool:
    kind, *a = shape
    if kind == "circle":
        return math.hypot(x - a[0], y - a[1]) <= a[2]
    if kind == "ring":
        return abs(math.hypot(x - a[0], y - a[1]) - a[2]) <= a[3] / 2
    if kind == "rect":
        return a[0] <= x <= a[0] + a[2] and a[1] <= y <= a[1] + a[3]
    x1, y1, x2, y2, width = a
    dx, dy = x2 - x1, y2 - y1
    t = max(0.0, min(1.0, ((x - x1) * dx + (y - y1) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - (x1 + t * dx), y - (y1 + t * dy)) <= width / 2


def _background(x: float, y: float) -> bool:
    r = 6  # rounded square, corner radius 6
    cx, cy = min(max(x, r), SIZE - r), min(max(y, r), SIZE - r)
    return math.hypot(x - cx, y - cy) <= r


def png(colour: tuple[int, int, int], shapes: list[tuple], glyph_masks: list[tuple]) -> bytes:
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # filter: none
        for px in range(SIZE):
            bg = glyph = 0
            for sy in range(4):
                for sx in range(4):
                    x, y = px + (sx + 0.5) / 4, py + (sy + 0.5) / 4
                    if _background(x, y):
                        bg += 1
                        if any(_inside(s, x, y) for s in shapes) and not any(
                            _inside(m, x, y) for m in glyph_masks
                        ):
                            glyph += 1
            alpha = round(255 * bg / 16)
            mix = glyph / bg if bg else 0
            rgb = [round(c * (1 - mix) + w * mix) for c, w in zip(colour, WHITE, strict=True)]
            row += bytes([*rgb, alpha])
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def svg(colour: tuple[int, int, int], shapes: list[tuple], glyph_masks: list[tuple]) -> str:
    fill = "#{:02x}{:02x}{:02x}".format(*colour)
    parts = [f'<rect width="32" height="32" rx="6" fill="{fill}"/>']
    for kind, *a in shapes:
        if kind == "circle":
            parts.append(f'<circle cx="{a[0]}" cy="{a[1]}" r="{a[2]}" fill="#fff"/>')
        elif kind == "ring":
            parts.append(
                f'<circle cx="{a[0]}" cy="{a[1]}" r="{a[2]}" fill="none" stroke="#fff" stroke-width="{a[3]}"/>'
            )
        elif kind == "rect":
            parts.append(f'<rect x="{a[0]}" y="{a[1]}" width="{a[2]}" height="{a[3]}" rx="2" fill="#fff"/>')
        else:
            parts.append(
                f'<path d="M{a[0]} {a[1]}L{a[2]} {a[3]}" stroke="#fff" stroke-width="{a[4]}" stroke-linecap="round"/>'
            )
    for _, *a in glyph_masks:
        parts.append(f'<path d="M{a[0]} {a[1]}L{a[2]} {a[3]}" stroke="{fill}" stroke-width="{a[4]}"/>')
    return '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' + "".join(parts) + "</svg>\n"


def main() -> None:
    for name, (colour, shapes) in SERVERS.items():
        masks = [s for s in shapes if s[0] == "line"] if name == "sqlite" else []
        body = [s for s in shapes if s not in masks]
        package = ROOT / "servers" / name / "src" / f"dockyard_{name.replace('-', '_')}"
        (package / "icon.svg").write_text(svg(colour, body, masks), encoding="utf-8")
        (package / "icon.png").write_bytes(png(colour, body, masks))
        print(name, len((package / "icon.svg").read_bytes()), len((package / "icon.png").read_bytes()))


if __name__ == "__main__":
    main()
