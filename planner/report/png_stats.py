#!/usr/bin/env python3
"""Prints {"width", "height", "distinct_colors", "non_white_fraction"} of a
PNG as JSON. A tiny reader (zlib + the five PNG row filters) for 8-bit RGB,
RGBA, grey and grey+alpha images, enough for Chromium's screenshots; no
third-party modules. Exit 1 with a message on a file that is not such a PNG.
"""
import json
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG (bad signature)")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]:
            raise ValueError("bad CRC in chunk %r" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("unsupported PNG: depth %d colour type %d interlace %d"
                         % (depth, ctype, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise ValueError("truncated image data")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
            elif ftype != 0:
                raise ValueError("bad filter type %d" % ftype)
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = read_png(sys.argv[1])
    colors, non_white = set(), 0
    for row in rows:
        for x in range(0, len(row), channels):
            px = row[x:x + channels]
            colors.add(px)
            rgb = px[:3] if channels >= 3 else px[:1] * 3
            if min(rgb) < 245:
                non_white += 1
    print(json.dumps({
        "width": width,
        "height": height,
        "distinct_colors": len(colors),
        "non_white_fraction": non_white / float(width * height),
    }))


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, zlib.error) as e:
        print("png_stats: %s" % e, file=sys.stderr)
        sys.exit(1)
