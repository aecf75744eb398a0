"""What an MP4/M4A/MOV file's header would make FFmpeg build, read before FFmpeg opens it.

FFmpeg's MP4 demuxer builds its index of every packet when the file is opened, from tables in the
header that can claim any count in a few bytes: an 18 KB M4A whose ``stsz`` box listed 20 million
packets of one size took the web process up 1.1 GB for 2.5 s per upload, two at a time, before
the file was refused anyway (helper-113); helper-115 got the same through other tracks, ``stz2``,
fragments, edit lists and a compressed header. Here the boxes are walked (ISO/IEC 14496-12: a box
is a 4-byte big-endian size, a 4-byte type, a 64-bit size after them when the first is 1, to the
end of the file when it is 0) down to each track's tables, so such a file is refused first. A
walk cannot know every table FFmpeg reads; the decode's own limits (packets, wall time) in
``prompt_audio.py`` are the second line.
"""

from __future__ import annotations

import struct

# Raw PCM in QuickTime lists one "sample" per audio frame (5.76 million for 120 s at 48 kHz).
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


MAX_EDITS = 1_000  # edit-list entries per track; a recording has one or two


def header_problem(path: str, max_packets: int) -> str | None:
    """Why the MP4-family file at ``path`` would make FFmpeg build an index far beyond any
    recording's, or ``None`` (also for a file that is not one; never raises for a malformed file,
    FFmpeg then says what it finds). Refused, all counted over every track whatever its handler
    (FFmpeg indexes every track, and took a ``vide`` or ``text`` track's table as well; helper-115):
    more than ``max_packets`` packets in a track's ``stsz``/``stz2`` or in all ``trun`` boxes of
    a fragmented file; more than :data:`MAX_EDITS` edit-list entries in a track (FFmpeg copied its
    index once per entry: 100,000 entries of 260 packets took +693 MB); a compressed header
    (``cmov``), which cannot be read before FFmpeg inflates it; more than :data:`_MAX_BOXES` boxes.
    Raw PCM tracks with one sample duration of 1 (QuickTime lists one "sample" per audio frame, and
    FFmpeg indexes those by chunk) are not counted."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            head = f.read(4096)
            if head[4:8] not in _TOP_LEVEL and b"ftyp" not in head and b"moov" not in head:
                return None
            budget = [_MAX_BOXES]
            fragments = 0
            for kind, start, end in _boxes(f, 0, size, budget):
                if kind == b"moov":
                    for child, c_start, c_end in _boxes(f, start, end, budget):
                        if child == b"cmov":
                            return "its header is compressed (cmov), which no recorder writes"
                        if child == b"trak" and (problem := _track_problem(f, c_start, c_end, budget, max_packets)):
                            return problem
                elif kind == b"moof":
                    for traf, t_start, t_end in _boxes(f, start, end, budget):
                        if traf != b"traf":
                            continue
                        for trun, r_start, _ in _boxes(f, t_start, t_end, budget):
                            if trun == b"trun":
                                f.seek(r_start + 4)  # version and flags (4), then the sample count
                                fragments += struct.unpack(">I", f.read(4))[0]
                    if fragments > max_packets:
                        return f"its fragments list {fragments:,} packets, far more than a recording holds"
            if budget[0] <= 0:
                return f"its header has more than {_MAX_BOXES:,} boxes, where a recording has a few dozen"
            return None
    except (OSError, struct.error, ValueError):
        return None


def _track_problem(f, start: int, end: int, budget: list[int], max_packets: int) -> str | None:
    if (edts := _child(f, start, end, b"edts", budget)) is not None:
        if (elst := _child(f, *edts, b"elst", budget)) is not None:
            f.seek(elst[0] + 4)  # version and flags (4), then the entry count
            edits = struct.unpack(">I", f.read(4))[0]
            if edits > MAX_EDITS:
                return f"a track's edit list has {edits:,} entries, where a recording has one or two"
    mdia = _child(f, start, end, b"mdia", budget)
    minf = _child(f, *mdia, b"minf", budget) if mdia is not None else None
    stbl = _child(f, *minf, b"stbl", budget) if minf is not None else None
    if stbl is None:
        return None
    tables = {kind: (s, e) for kind, s, e in _boxes(f, *stbl, budget)}
    if b"stsd" in tables and b"stts" in tables:
        f.seek(tables[b"stsd"][0] + 12)  # version and flags (4), entry count (4), the entry's size (4), its format
        pcm = f.read(4) in _PCM_FORMATS
        f.seek(tables[b"stts"][0] + 4)  # version and flags (4), entry count (4), then (count, duration) pairs
        entries, _, duration = struct.unpack(">III", f.read(12))
        if pcm and entries == 1 and duration == 1:
            return None
    for kind in (b"stsz", b"stz2"):
        if kind in tables:
            f.seek(tables[kind][0] + 8)  # version and flags (4), sample size or field size (4), the count
            packets = struct.unpack(">I", f.read(4))[0]
            if packets > max_packets:
                return f"its header lists {packets:,} packets in a track, far more than a recording holds"
    return None
