"""How many audio packets an MP4/M4A/MOV file's header lists, read before FFmpeg opens it.

FFmpeg's MP4 demuxer builds its index of every packet when the file is opened, from tables in the
header that can claim any count in a few bytes: an 18 KB M4A whose ``stsz`` box listed 20 million
packets of one size took the web process up 1.1 GB for 2.5 s per upload, two at a time, before
the file was refused anyway (helper-113). Here the boxes are walked (ISO/IEC 14496-12: a box is a
4-byte big-endian size, a 4-byte type, a 64-bit size after them when the first is 1, to the end
of the file when it is 0) down to each audio track's sample table, so such a file is refused first.
"""

from __future__ import annotations

import struct

# Raw PCM in QuickTime lists one "sample" per audio frame (5.76 million for 120 s at 48 kHz), and
# FFmpeg indexes it by chunk, not by sample: such tracks are not counted.
_PCM_FORMATS = {b"lpcm", b"sowt", b"twos", b"in24", b"in32", b"fl32", b"fl64", b"raw ", b"NONE", b"ulaw",
                b"alaw"}
_TOP_LEVEL = {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot", b"uuid", b"meta"}
_MAX_BOXES = 10_000  # walked in all; a real file has a few dozen


def _boxes(f, start: int, end: int, budget: list[int]):
    """``(type, data start, box end)`` of each box between ``start`` and ``end``."""
    at = start
    while at + 8 <= end and budget[0] > 0:
        budget[0] -= 1
        f.seek(at)
        header = f.read(8)
        if len(header) < 8:
            return
        size, kind = struct.unpack(">I4s", header)
        data_at = at + 8
        if size == 1:
            large = f.read(8)
            if len(large) < 8:
                return
            size, data_at = struct.unpack(">Q", large)[0], at + 16
        elif size == 0:
            size = end - at
        if size < data_at - at:
            return
        yield kind, data_at, min(at + size, end)
        at += size


def _child(f, start: int, end: int, kind: bytes, budget: list[int]) -> tuple[int, int] | None:
    return next(((s, e) for k, s, e in _boxes(f, start, end, budget) if k == kind), None)


def listed_audio_packets(path: str) -> int | None:
    """The largest count of packets an audio track of the MP4-family file at ``path`` lists in
    its header (``stsz`` sample count; compressed tracks only), or ``None`` for a file that is
    not one or lists no audio track. Reads a few kilobytes, by seeking; never raises for a
    malformed file (``None`` then, and FFmpeg says what it finds)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(4)
            if f.read(4) not in _TOP_LEVEL:
                return None
            budget = [_MAX_BOXES]
            most = None
            for kind, start, end in _boxes(f, 0, size, budget):
                if kind != b"moov":
                    continue
                for trak, t_start, t_end in _boxes(f, start, end, budget):
                    if trak != b"trak":
                        continue
                    count = _audio_track_packets(f, t_start, t_end, budget)
                    if count is not None:
                        most = count if most is None else max(most, count)
            return most
    except (OSError, struct.error, ValueError):
        return None


def _audio_track_packets(f, start: int, end: int, budget: list[int]) -> int | None:
    mdia = _child(f, start, end, b"mdia", budget)
    if mdia is None:
        return None
    hdlr = _child(f, *mdia, b"hdlr", budget)
    if hdlr is None:
        return None
    f.seek(hdlr[0] + 8)  # version and flags (4), pre-defined (4), then the handler type
    if f.read(4) != b"soun":
        return None
    stbl = None
    if (minf := _child(f, *mdia, b"minf", budget)) is not None:
        stbl = _child(f, *minf, b"stbl", budget)
    if stbl is None:
        return None
    if (stsd := _child(f, *stbl, b"stsd", budget)) is not None:
        f.seek(stsd[0] + 12)  # version and flags (4), entry count (4), the entry's size (4), its format
        if f.read(4) in _PCM_FORMATS:
            return None
    if (stsz := _child(f, *stbl, b"stsz", budget)) is None:
        return None
    f.seek(stsz[0] + 8)  # version and flags (4), sample size (4), then the sample count
    field = f.read(4)
    return struct.unpack(">I", field)[0] if len(field) == 4 else None
