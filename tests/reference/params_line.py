"""params_line — the case lines the C tests write for their Python references
(blur_kernel_ref.py, realesrgan_ops_ref.py): `I key=value key=value ...`, I the case index.
No side effects on import."""


def parse(line):
    """{'index': I, key: value (str), ...} of one line."""
    words = line.split()
    rec = {"index": int(words[0])}
    for w in words[1:]:
        key, value = w.split("=", 1)
        rec[key] = value
    return rec
