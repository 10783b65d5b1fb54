"""Sliding-window neighbours of a video frame, for tests/test_frame_indices.c (`py` mode).

BasicSR's generate_frame_indices (basicsr/data/data_util.py) restated from its docstring and
rule, here in this file's own words: the window of frame `center` in a clip of `length` frames
is center - half .. center + half; a position before the first frame or after the last one is
moved back into the clip by the padding mode. Writes DIR/cases.txt, one line per
(padding, length 1..7, window 1..7 odd, center 0..length-1):
    "<padding> <length> <window> <center>: <i0> <i1> ..."   or   "...: refused"
"refused" when a moved position is still outside [0, length): PixFlow refuses those windows
(BasicSR would read past the clip, or wrap a negative Python index)."""
import os
import sys


def window(center, length, size, mode):
    half = size // 2
    last = length - 1
    picked = []
    for pos in range(center - half, center + half + 1):
        if 0 <= pos <= last:
            picked.append(pos)
            continue
        before = pos < 0
        if mode == "replicate":
            moved = 0 if before else last
        elif mode == "reflection":          # mirror about the end frame
            moved = -pos if before else 2 * last - pos
        elif mode == "reflection_circle":   # continue from the window's far end inwards
            moved = center + half - pos if before else (center - half) - (pos - last)
        elif mode == "circle":              # wrap by the window's size
            moved = size + pos if before else pos - size
        else:
            raise ValueError(mode)
        picked.append(moved)
    return picked


def main():
    # BasicSR's docstring examples: center 0, window 5
    docs = {"replicate": [0, 0, 0, 1, 2], "reflection": [2, 1, 0, 1, 2],
            "reflection_circle": [4, 3, 0, 1, 2], "circle": [3, 4, 0, 1, 2]}
    for mode, want in docs.items():
        got = window(0, 100, 5, mode)
        assert got == want, (mode, got, want)
    lines = []
    for mode in ("replicate", "reflection", "reflection_circle", "circle"):
        for length in range(1, 8):
            for size in range(1, 8, 2):
                for center in range(length):
                    got = window(center, length, size, mode)
                    ok = all(0 <= i < length for i in got)
                    text = " ".join(str(i) for i in got) if ok else "refused"
                    lines.append(f"{mode} {length} {size} {center}: {text}")
    with open(os.path.join(sys.argv[1], "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
